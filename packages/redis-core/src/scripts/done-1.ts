/** Record a claim as done. */
export default `-- done-1: mark a claim done, if (and only if) no other token holds it.
-- KEYS[1]  the claim key; it holds p:<token> or d:<token>, then :<fingerprint> if it has one,
--          or, done without a fingerprint, the bare token when it is all digits
-- ARGV[1]  the owner token
-- ARGV[2]  the done TTL, in milliseconds
-- ARGV[3]  the payload fingerprint, or '' for none (the record then keeps the one it has)
-- Returns  1 when the key now holds the done record of the token: it held p:<token> or its
--          done record already (a retry after a timeout is not a loss), or nothing (the claim
--          expired while nobody else took the key: the work happened, so the record is made);
--          0 when another token's record is there (left as it is);
--          -1 when the key holds a value hookgate did not write (left as it is).
local value = redis.call('GET', KEYS[1])
local suffix = ''
if ARGV[3] ~= '' then suffix = ':' .. ARGV[3] end
-- The usual case, our own claim (p:<token>), skips the patterns: its token and rest are known.
if value and value ~= 'p:' .. ARGV[1] then
  local kind, token, rest = string.match(value, '^([pd]):([^:]+)(.*)$')
  if not kind then
    token = string.match(value, '^(%d+)$')
    if not token then return -1 end
    rest = ''
  end
  if token ~= ARGV[1] then return 0 end
  if ARGV[3] == '' then suffix = rest end
end
-- A bare all-digit token is kept by Redis as an integer in the object header: the compact form.
local record = 'd:' .. ARGV[1] .. suffix
if suffix == '' and string.match(ARGV[1], '^%d+$') then record = ARGV[1] end
redis.call('SET', KEYS[1], record, 'PX', ARGV[2])
return 1
`;
