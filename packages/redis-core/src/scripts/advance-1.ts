/** The sequence guard's admission of one event of a subject. */
export default `-- advance-1: admit an event to its subject: compare it with the watermark, and take the
-- subject's hold when it is newer, atomically.
-- KEYS[1]  the watermark key; it holds '<at>:<eventKey>', or while an event is processed
--          'h:<holdUntil>:<holder>:<at>:<eventKey>' (holdUntil: epoch ms on the server clock)
-- ARGV[1]  at: the event time, integer epoch milliseconds, as a decimal string
-- ARGV[2]  eventKey: the event's idempotency key (may contain ':')
-- ARGV[3]  the owner token of the event's claim, which owns the hold
-- ARGV[4]  the hold TTL, in milliseconds
-- ARGV[5]  the watermark TTL, in milliseconds
-- ARGV[6]  ties: 'apply' lets an event with the watermark's time through, 'drop' does not
-- Returns  1 applied: the watermark is now ARGV[1]:ARGV[2], held by ARGV[3];
--          0 stale: not newer than the watermark; nothing changed;
--          2 held: another event holds the subject; nothing changed;
--          -1 the key holds a value hookgate did not write; nothing changed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local value = redis.call('GET', KEYS[1])
if value then
  local untilMs, holder, mark, markKey = string.match(value, '^h:(%d+):([^:]+):(%-?%d+):(.+)$')
  if not untilMs then
    mark, markKey = string.match(value, '^(%-?%d+):(.+)$')
    if not mark then return -1 end
  end
  local at = tonumber(ARGV[1])
  mark = tonumber(mark)
  if at < mark then return 0 end
  if at == mark and ARGV[6] ~= 'apply' and markKey ~= ARGV[2] then return 0 end
  -- A live hold of another event; a hold of this same event was left by a worker whose claim
  -- expired, and the caller owns that claim now.
  if untilMs and tonumber(untilMs) > now and markKey ~= ARGV[2] then return 2 end
end
local hold = tonumber(ARGV[4])
local ttl = math.max(tonumber(ARGV[5]), hold)
redis.call('SET', KEYS[1],
  'h:' .. string.format('%d', now + hold) .. ':' .. ARGV[3] .. ':' .. ARGV[1] .. ':' .. ARGV[2],
  'PX', string.format('%d', ttl))
return 1
`;
