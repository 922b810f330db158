/** Record a claim as done. */
export default `-- done-1: mark a claim done, if (and only if) no other token holds it.
-- KEYS[1]  the claim key
-- ARGV[1]  the owner token
-- ARGV[2]  the done TTL, in milliseconds
-- Returns  1 when the key now holds d:<token>: it held p:<token>, or d:<token> already (a retry
--          after a timeout is not a loss), or nothing (the claim expired while nobody else took
--          the key: the work happened, so the done record is created);
--          0 when another token's record is there (left as it is);
--          -1 when the key holds a value hookgate did not write (left as it is).
local value = redis.call('GET', KEYS[1])
if value and value ~= 'p:' .. ARGV[1] and value ~= 'd:' .. ARGV[1] then
  local kind = string.sub(value, 1, 2)
  if kind == 'p:' or kind == 'd:' then return 0 end
  return -1
end
redis.call('SET', KEYS[1], 'd:' .. ARGV[1], 'PX', ARGV[2])
return 1
`;
