/** The sequence guard's compare-and-advance of a subject's watermark. */
export default `-- advance-1: move a subject's watermark to a newer event, atomically.
-- KEYS[1]  the watermark key; it holds '<at>:<eventKey>'
-- ARGV[1]  at: the event time, integer epoch milliseconds, as a decimal string
-- ARGV[2]  eventKey: the event's idempotency key (may contain ':')
-- ARGV[3]  the watermark TTL, in milliseconds
-- ARGV[4]  ties: 'apply' lets an event with the watermark's time through, 'drop' does not
-- Returns  1 when the event is applied (the watermark is now ARGV[1]:ARGV[2]), 0 when stale.
local value = redis.call('GET', KEYS[1])
if value then
  local colon = string.find(value, ':', 1, true)
  -- A value hookgate did not write (no colon, no number) is replaced rather than trusted.
  local mark = colon and tonumber(string.sub(value, 1, colon - 1))
  if mark then
    local at = tonumber(ARGV[1])
    if at < mark then return 0 end
    if at == mark and ARGV[4] ~= 'apply' and string.sub(value, colon + 1) ~= ARGV[2] then
      return 0
    end
  end
end
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. ARGV[2], 'PX', ARGV[3])
return 1
`;
