/** Record a claim as done. */
export default `-- done-1: mark a claim done, if (and only if) no other token holds it.
-- KEYS[1]  the claim key; it holds p:<token> or d:<token>, then :<fingerprint> if it has one
-- ARGV[1]  the owner token
-- ARGV[2]  the done TTL, in milliseconds
-- ARGV[3]  the payload fingerprint, or '' for none (the record then keeps the one it has)
-- Returns  1 when the key now holds d:<token>: it held p:<token> or d:<token> already (a
--          retry after a timeout is not a loss), or nothing (the claim expired while nobody
--          else took the key: the work happened, so the done record is created);
--          0 when another token's record is there (left as it is);
--          -1 when the key holds a value hookgate did not write (left as it is).
local value = redis.call('GET', KEYS[1])
local suffix = ''
if ARGV[3] ~= '' then suffix = ':' .. ARGV[3] end
if value then
  local kind, token, rest = string.match(value, '^([pd]):([^:]+)(.*)$')
  if not kind then return -1 end
  if token ~= ARGV[1] then return 0 end
  if ARGV[3] == '' then suffix = rest end
end
redis.call('SET', KEYS[1], 'd:' .. ARGV[1] .. suffix, 'PX', ARGV[2])
return 1
`;
