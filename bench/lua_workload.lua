-- lua_workload.lua - an allocation workload with deep C stacks for
-- Lua 5.4 (bench/stack_depth.py runs it under bench/lua_host).
--
--   lua_host bench/lua_workload.lua [ROUNDS]      (default 6)
--
-- What a tool written in Lua does to the interpreter's C stack, in one
-- deterministic script (fixed seed, no input):
--   * a code generator writes Lua modules: nested functions, blocks,
--     expressions and table constructors, built with string.format,
--     table.concat and gsub templates expanded recursively through
--     gsub callbacks (each level: gsub's MatchState and a luaL_Buffer,
--     about 1.5 KiB of C stack);
--   * the modules are compiled by Lua's own parser, which recurses in C
--     (one or more C frames per nesting level of functions, blocks and
--     expressions): with load() from strings, and with loadfile() from
--     files as require does (luaL_loadfilex keeps a BUFSIZ = 8 KiB
--     buffer on the C stack under the parser);
--   * the compiled modules run: they build nested tables and closures;
--   * a serializer prints the result (string.format, table.concat,
--     table.sort with a Lua comparator, tostring through __tostring),
--     and pcall wraps each module's work, as a driver would.
-- About 35000 allocations per round on Lua 5.4.4 (lua_host prints the
-- exact count).

local ROUNDS = tonumber(... or 6)
math.randomseed(42)
local random, format, concat, rep = math.random, string.format, table.concat, string.rep

-- Templates: "${name}" is replaced by the expansion of templates[name],
-- "${name:arg}" passes arg on as "$1". Expansion recurses through gsub's
-- callback, so the C stack grows by gsub's frames per level.
local templates = {
  module = "local M = {}\n${decls}\n${decls}\nM.data = { ${list} }\nreturn M\n",
  decls = "local ${id} = ${table}\nM.${id} = ${table}\n",
  table = "{ name = ${str}, size = ${expr}, list = { ${list} } }",
  list = "${str}, ${expr}, ${sub}, ${sub}",
  sub = "${table}",
  str = "%q",
}
local expand
local function fill(name, depth)
  local t = templates[name]
  if name == "str" then return format(t, "s" .. random(1000)) end
  if name == "id" then return "v" .. random(1000000) end
  if name == "expr" then return tostring(random(100)) end
  if depth > 8 or (name == "sub" and random(3) == 1) then return "nil" end
  return expand(t, depth + 1)
end
function expand(text, depth)
  return (text:gsub("%${(%w+)}", function(n) return fill(n, depth) end))
end

-- Expressions nested `depth` deep: (a + (b * (c - ...)))
local ops = { "+", "-", "*", "/" }
local function gen_expr(depth)
  if depth == 0 then
    local r = random(3)
    if r == 1 then return tostring(random(99)) end
    if r == 2 then return "a" end
    return "#t"
  end
  return format("(%s %s %s)", gen_expr(depth - 1), ops[random(#ops)],
                gen_expr(random(0, 1)))
end

-- Table constructors nested `depth` deep.
local function gen_table(depth)
  if depth == 0 then return format("%q", "k" .. random(500)) end
  local parts = {}
  for i = 1, random(2, 4) do
    if i % 2 == 0 then
      parts[#parts + 1] = format("f%d = %s", i, gen_table(depth - 1))
    else
      parts[#parts + 1] = gen_table(depth - 1)
    end
  end
  return "{ " .. concat(parts, ", ") .. " }"
end

-- A function with `depth` nested local functions, each with blocks,
-- expressions and tables. Every level returns a table the caller keeps.
local function gen_func(name, depth, out, indent)
  local pad = rep("  ", indent)
  out[#out + 1] = format("%slocal function %s(a, t)", pad, name)
  out[#out + 1] = format("%s  local r = { n = %s, d = %s }", pad,
                         gen_expr(random(3, 12)), gen_table(random(1, 5)))
  out[#out + 1] = format("%s  for i = 1, 3 do", pad)
  out[#out + 1] = format("%s    if i %% 2 == 0 then", pad)
  out[#out + 1] = format("%s      r[#r + 1] = { i = i, s = ('x'):rep(i) .. %q }",
                         pad, name)
  out[#out + 1] = format("%s    else", pad)
  out[#out + 1] = format("%s      while #r < i do r[#r + 1] = %s end", pad,
                         gen_expr(random(1, 4)))
  out[#out + 1] = format("%s    end", pad)
  out[#out + 1] = format("%s  end", pad)
  if depth > 1 then
    gen_func(name .. "_" .. depth, depth - 1, out, indent + 1)
    out[#out + 1] = format("%s  r.inner = %s_%d(a + 1, r)", pad, name, depth)
  end
  out[#out + 1] = format("%s  return r", pad)
  out[#out + 1] = format("%send", pad)
end

local function gen_module(k)
  local out = { expand(templates.module, 0) }
  out[1] = out[1]:gsub("return M\n$", "")
  for f = 1, 3 do
    local name = format("f%d_%d", k, f)
    gen_func(name, random(4, 14), out, 0)
    out[#out + 1] = format("M.%s = %s", name, name)
  end
  out[#out + 1] = "return M"
  return concat(out, "\n")
end

-- Serializer: nested tables to text, keys sorted with a Lua comparator.
local meta = { __tostring = function(t) return format("<node %d>", t.id) end }
local function keycmp(x, y)
  local tx, ty = type(x), type(y)
  if tx ~= ty then return tx < ty end
  return x < y
end
local function serialize(v, out, depth)
  local tv = type(v)
  if tv == "table" then
    if depth > 12 then out[#out + 1] = tostring(setmetatable({ id = depth }, meta)); return end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, keycmp)
    out[#out + 1] = "{"
    for _, k in ipairs(keys) do
      out[#out + 1] = format("[%s]=", type(k) == "string" and format("%q", k) or tostring(k))
      serialize(v[k], out, depth + 1)
      out[#out + 1] = ","
    end
    out[#out + 1] = "}"
  elseif tv == "string" then
    out[#out + 1] = format("%q", v)
  else
    out[#out + 1] = tostring(v)
  end
end

local tmpname = os.tmpname()
local total = 0
for round = 1, ROUNDS do
  for k = 1, 4 do
    local src = gen_module(round * 10 + k)
    local chunk, err
    if k == 1 then
      -- as require does: from a file
      local f = assert(io.open(tmpname, "w"))
      f:write(src)
      f:close()
      chunk, err = loadfile(tmpname)
    else
      chunk, err = load(src, "=gen" .. k)
    end
    if not chunk then error(err) end
    local ok, res = pcall(function()
      local M = chunk()
      local results = {}
      for name, f in pairs(M) do
        if type(f) == "function" then results[name] = f(k, {}) end
      end
      local out = {}
      serialize(results, out, 0)
      return concat(out)
    end)
    if not ok then error(res) end
    total = total + #res
  end
end
os.remove(tmpname)
io.write(format("lua_workload: %d rounds, %d bytes serialized\n", ROUNDS, total))
