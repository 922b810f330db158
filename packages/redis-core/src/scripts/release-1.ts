/** Delete the caller's processing claim. */
export default `-- release-1: delete a processing claim, if (and only if) the caller owns it.
-- KEYS[1]  the claim key
-- ARGV[1]  the owner token
-- Returns  1 when deleted, 0 when the key is absent, done, or held by another token.
if redis.call('GET', KEYS[1]) == 'p:' .. ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;
