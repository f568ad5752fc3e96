--[[
  Releases the lease whoever holds it; with a fence, only if the holder has exactly that fence.

  KEYS[1] lease key  forgesync:lease:{<key>}
  ARGV[1] fence as a decimal string, or '' for any holder

  Returns 1 when released, 0 when the key is absent or its fence differs.
]]
if ARGV[1] == '' then
  return redis.call('DEL', KEYS[1])
end
local current = redis.call('GET', KEYS[1])
if current and string.match(current, '^[^\n]*\n([^\n]*)') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
