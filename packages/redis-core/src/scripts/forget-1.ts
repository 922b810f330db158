/** Delete a record, whoever owns it. */
export default `-- forget-1: delete a claim or watermark record, whoever owns it (a deliberate replay).
-- KEYS[1]  the key; a claim holds p:<token> or d:<token> (then :<fingerprint>, if any) or a
--          bare all-digit token; a watermark <at>:<eventKey> or h:<holdUntil>:<token>:<at>:<eventKey>
-- Returns  1 when a record was deleted; 0 when the key was absent;
--          -1 when it holds a value hookgate did not write (left as it is).
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
-- The patterns are parseRecord's (@hookgate/core), whole: a value it refuses is left here too.
if string.match(value, '^[pd]:[^:]+$') or string.match(value, '^[pd]:[^:]+:.')
  or string.match(value, '^%d+$')
  or string.match(value, '^%-?%d+:.') or string.match(value, '^h:%d+:[^:]+:%-?%d+:.') then
  redis.call('DEL', KEYS[1])
  return 1
end
return -1
`;
