/** Turn the caller's claim into a done record. */
export default `-- done-1: mark a claim done, if (and only if) the caller owns it.
-- KEYS[1]  the claim key
-- ARGV[1]  the owner token
-- ARGV[2]  the done TTL, in milliseconds
-- Returns  1 when the key now holds d:<token> (also when it already did: a retry after a
--          timeout is not a loss), 0 when it is absent or held by another token.
local value = redis.call('GET', KEYS[1])
if value == 'p:' .. ARGV[1] or value == 'd:' .. ARGV[1] then
  redis.call('SET', KEYS[1], 'd:' .. ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
`;
