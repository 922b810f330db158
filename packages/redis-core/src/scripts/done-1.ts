/** Record a claim as done. */
export default `-- done-1: mark a claim done, if (and only if) no other token holds it.
-- KEYS[1]  the claim key; it holds p:<token> or d:<token>, then :<fingerprint> if it has one,
--          or, done without a fingerprint, the bare token when it is all digits
-- ARGV[1]  the owner token
-- ARGV[2]  the done TTL, in milliseconds
-- ARGV[3]  the done record, formed by the client: d:<token>:<fingerprint> with the payload's
--          fingerprint; without one, the bare token when it is all digits, else d:<token> (and
--          then the record keeps the fingerprint the key's record has, if any)
-- Returns  1 when the key now holds the done record of the token: it held p:<token> or its
--          done record already (a retry after a timeout is not a loss), or nothing (the claim
--          expired while nobody else took the key: the work happened, so the record is made);
--          0 when another token's record is there (left as it is);
--          -1 when the key holds a value hookgate did not write (left as it is).
local value = redis.call('GET', KEYS[1])
local token, record = ARGV[1], ARGV[3]
-- The usual case, our own claim (p:<token>), skips the patterns.
if value and value ~= 'p:' .. token then
  local kind, owner, rest = string.match(value, '^([pd]):([^:]+)(.*)$')
  if not kind then
    owner = string.match(value, '^(%d+)$')
    if not owner then return -1 end
    rest = ''
  end
  if owner ~= token then return 0 end
  -- A record without a fingerprint keeps the one the key's record has.
  if rest ~= '' and (record == token or record == 'd:' .. token) then
    record = 'd:' .. token .. rest
  end
end
redis.call('SET', KEYS[1], record, 'PX', ARGV[2])
return 1
`;
