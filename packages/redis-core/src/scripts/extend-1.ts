/** Reset the TTL of the caller's processing claim. */
export default `-- extend-1: reset the TTL of a processing claim, if (and only if) the caller owns it.
-- KEYS[1]  the claim key
-- ARGV[1]  the owner token
-- ARGV[2]  the new TTL, in milliseconds
-- Returns  1 when extended, 0 when the key is absent, done, or held by another token.
if redis.call('GET', KEYS[1]) == 'p:' .. ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`;
