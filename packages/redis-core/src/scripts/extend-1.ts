/** Reset the TTL of the caller's processing claim. */
export default `-- extend-1: reset the TTL of a processing claim, if (and only if) the caller owns it.
-- KEYS[1]  the claim key
-- ARGV[1]  the owner token
-- ARGV[2]  the new TTL, in milliseconds
-- Returns  1 when extended; 0 when the key is absent, done, or another token's;
--          -1 when it holds a value hookgate did not write (left as it is).
local value = redis.call('GET', KEYS[1])
if value == 'p:' .. ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not value then return 0 end
local kind = string.sub(value, 1, 2)
if kind == 'p:' or kind == 'd:' then return 0 end
return -1
`;
