/** End the caller's hold on a subject, keeping the watermark. */
export default `-- release-hold-1: end the hold the caller has on a subject; the watermark and its TTL stay.
-- KEYS[1]  the watermark key (see advance-1)
-- ARGV[1]  the owner token
-- Returns  1 when the subject is free of the caller's hold: ended, or not held by anyone;
--          0 when another token holds it (left as it is);
--          -1 when the key holds a value hookgate did not write (left as it is).
local value = redis.call('GET', KEYS[1])
if not value then return 1 end
local untilMs, holder, rest = string.match(value, '^h:(%d+):([^:]+):(%-?%d+:.+)$')
if not untilMs then
  if string.match(value, '^%-?%d+:.') then return 1 end
  return -1
end
if holder == ARGV[1] then
  redis.call('SET', KEYS[1], rest, 'KEEPTTL')
  return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(untilMs) > now then return 0 end
return 1
`;
