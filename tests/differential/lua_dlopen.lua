-- lua_dlopen.lua - the Lua interpreter case of the differential corpus
-- (tests/integration/test_differential.py), run by lua_host:
-- allocations under deep C recursion (pcall nests luaV_execute on the C
-- stack, a Lua-to-Lua call does not), then require("lfs") -- a dlopen of
-- liblua5.4-filesystem.so after samples were taken -- then allocations
-- made from inside that module's code (lfs.attributes builds a table)
-- and again under deep recursion. Stacks must name host frames (and the
-- module's) after the dlopen as before it.
local function nest(n, work)
  if n == 0 then
    return work()
  end
  local ok, r = pcall(nest, n - 1, work)
  if not ok then error(r) end
  return r
end

local keep = {}
local function churn()
  local t = {}
  for i = 1, 4 do
    t[i] = string.rep("x", 20 + i) .. tostring(i)
  end
  keep[#keep + 1] = t
  return #t
end

for depth = 1, 12, 3 do
  nest(depth, churn)
end

local lfs = require("lfs")   -- dlopen, mid-run

local here = arg and arg[0] or "."
local function stat()
  local a = lfs.attributes(here)
  keep[#keep + 1] = a
  return a and a.mode
end
for depth = 1, 12, 3 do
  nest(depth, stat)
  nest(depth, churn)
end
-- deeper than the stack copy: both sides must stop at the same frame
nest(40, churn)
print("lua_dlopen: " .. #keep)
