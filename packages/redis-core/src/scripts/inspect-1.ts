/** Read a record and the time it has left. */
export default `-- inspect-1: read the value under a key and its TTL, changing nothing.
-- KEYS[1]  a claim or watermark key
-- Returns  {} when the key is absent; {value, pttl} otherwise (pttl -1: no expiry).
local value = redis.call('GET', KEYS[1])
if not value then return {} end
return {value, redis.call('PTTL', KEYS[1])}
`;
