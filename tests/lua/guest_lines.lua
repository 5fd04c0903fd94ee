-- guest_lines.lua: a Lua script whose allocations per line are known by
-- construction, for examples/lua_guest (tests/integration/test_guest.py).
--
--   lua_guest tests/lua/guest_lines.lua [N]      (N: default 300)
--
-- A line marked "-- @NAME" is found by the test by its marker, not by
-- its number. Each marked line is one whole loop, so that every
-- instruction of it is on that line (Lua 5.4 charges an allocation to
-- the line of the last instruction that saved pc; see lua_guest.c):
--   @tables    N new tables, in `inner`, called as main chunk -> outer
--              -> inner (a guest stack of 3 frames)
--   @strings   N strings of distinct lengths (41 .. 40 + N bytes, so
--              each is a new string: none is interned before)
--   @leaf      N / 2 one-element tables, from two different callers: two
--              guest stacks that end on the same line (one site)
--   @deep      one table (made by a C function, table.pack: a call saves
--              pc, where a table constructor at the start of a function
--              would be charged to the line the function is defined on)
--              at the bottom of a recursion 70 Lua frames deep (deeper
--              than the 64 frames lua_guest keeps)
-- No call here is a tail call (`return f(x)`): Lua drops the caller's
-- frame for one, and its name with it.
-- Each count is a lower bound: Lua also allocates at these lines (the
-- arrays that hold the results grow there). Then the collector runs, and
-- the script ends with os.exit, which does not close the state: what the
-- globals keep (the tables of @tables, the strings of @strings) is live
-- at exit, what they dropped (@leaf's) was freed.

local N = tonumber(arg and arg[1]) or 300

local function inner(n)
  local t = {}
  for i = 1, n do t[i] = {} end -- @tables
  return t
end

local function outer(n)
  local t = inner(n) -- not a tail call: outer stays on the stack
  return t
end

local function strings(n)
  local s = {}
  for i = 1, n do s[i] = string.rep("x", 40 + i) end -- @strings
  return s
end

local function leaf(n)
  local r = {}
  for i = 1, n do r[i] = {i} end -- @leaf
  return r
end

local function left(n) local r = leaf(n); return r end
local function right(n) local r = leaf(n); return r end

local function deep(d)
  if d == 0 then
    return table.pack(d) -- @deep
  end
  local r = deep(d - 1)
  return r
end

kept_tables = outer(N)
kept_strings = strings(N)
local dropped = { left(N // 2), right(N // 2) }
kept_deep = deep(69)
dropped = nil
collectgarbage()
os.exit(0)
