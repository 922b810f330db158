/** Delete the caller's processing claim. */
export default `-- release-1: delete a processing claim, if (and only if) the caller owns it.
-- KEYS[1]  the claim key; it holds p:<token> or d:<token>, then :<fingerprint> if it has one,
--          or a done record's bare all-digit token
-- ARGV[1]  the owner token
-- Returns  1 when the key is free of the caller's claim: deleted, or absent already;
--          0 when it holds a done record or another token's claim (left as it is);
--          -1 when it holds a value hookgate did not write (left as it is).
local value = redis.call('GET', KEYS[1])
if not value then return 1 end
local kind, token = string.match(value, '^([pd]):([^:]+)')
if not kind then
  if string.match(value, '^%d+$') then return 0 end -- a done record, bare token
  return -1
end
if kind == 'p' and token == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;
