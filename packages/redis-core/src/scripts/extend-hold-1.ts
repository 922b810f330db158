/** Reset the caller's hold on a subject. */
export default `-- extend-hold-1: make the caller's hold on a subject end ARGV[2] ms from now.
-- KEYS[1]  the watermark key (see advance-1)
-- ARGV[1]  the owner token
-- ARGV[2]  the new hold TTL, in milliseconds
-- Returns  1 when extended; 0 when there is no watermark, or the caller does not hold it;
--          -1 when the key holds a value hookgate did not write (left as it is).
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local untilMs, holder, rest = string.match(value, '^h:(%d+):([^:]+):(%-?%d+:.+)$')
if not untilMs then
  if string.match(value, '^%-?%d+:.') then return 0 end
  return -1
end
if holder ~= ARGV[1] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local hold = tonumber(ARGV[2])
redis.call('SET', KEYS[1], 'h:' .. string.format('%d', now + hold) .. ':' .. holder .. ':' .. rest,
  'KEEPTTL')
if redis.call('PTTL', KEYS[1]) < hold then redis.call('PEXPIRE', KEYS[1], hold) end
return 1
`;
