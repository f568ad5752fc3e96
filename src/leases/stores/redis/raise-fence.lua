--[[
  Raises the holder's fence above a floor, if the token still holds the lease: for a holder whose
  fenced writes are refused because the fences were reset under it (Redis restarted without
  persistence, FLUSHDB, failover) or come from another backend that counted higher.

  KEYS[1] lease key  forgesync:lease:{<key>}
  KEYS[2] fence key  forgesync:fence:{<key>}
  ARGV[1] token
  ARGV[2] floor, a decimal integer of at most 2^53 - 2 (the caller checks), so that floor + 1 is
          exact in Lua's numbers (doubles)

  Stored, only when ARGV[1] holds the key:
    lease value  its fence becomes max(fence, floor + 1); the rest of the value and the expiry
                 stay (KEEPTTL, Redis 6+). Not rewritten when the fence is already above the floor.
    fence key    raised to the holder's fence when it is below it (or missing), so that the INCR of
                 every later acquire gives a larger fence still. Never lowered.

  Returns
    fence   the holder's fence after the call, as a decimal string (exact at any size)
    0       ARGV[1] does not hold the key (absent: released, expired or wiped; or another token's);
            nothing was changed
]]
local current = redis.call('GET', KEYS[1])
local n = #ARGV[1]
-- Same test as acquire.lua: the value starts with "token\n".
if not (current and string.sub(current, 1, n) == ARGV[1] and string.byte(current, n + 1) == 10) then
  return 0
end

-- The value is token \n fence \n ...: the fence runs from n + 2 to the next newline.
local after = string.find(current, '\n', n + 2, true)
local fence = string.sub(current, n + 2, after - 1)
local target = tonumber(ARGV[2]) + 1
-- Comparing as doubles is exact here: target is below 2^53, and rounding a larger fence to a
-- double cannot bring it below target.
if tonumber(fence) < target then
  -- %.0f writes any integer-valued double in full (plain concatenation would use %.14g).
  fence = string.format('%.0f', target)
  redis.call('SET', KEYS[1], ARGV[1] .. '\n' .. fence .. string.sub(current, after), 'KEEPTTL')
end

-- The counter is behind the holder when raised just now, or when it was lost on its own
-- (evicted, deleted) while the lease survived. (Exact below 2^53, where raised fences are.)
local counter = redis.call('GET', KEYS[2])
if not counter or tonumber(counter) < tonumber(fence) then
  redis.call('SET', KEYS[2], fence)
end
return fence
