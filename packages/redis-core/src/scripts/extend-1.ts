/** Reset the TTL of the caller's processing claim. */
export default `-- extend-1: reset the TTL of a processing claim, if (and only if) the caller owns it.
-- KEYS[1]  the claim key; it holds p:<token> or d:<token>, then :<fingerprint> if it has one,
--          or a done record's bare all-digit token
-- ARGV[1]  the owner token
-- ARGV[2]  the new TTL, in milliseconds
-- Returns  1 when extended; 0 when the key is absent, done, or another token's;
--          -1 when it holds a value hookgate did not write (left as it is).
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local kind, token = string.match(value, '^([pd]):([^:]+)')
if not kind then
  if string.match(value, '^%d+$') then return 0 end -- a done record, bare token
  return -1
end
if kind == 'p' and token == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`;
