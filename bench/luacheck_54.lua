-- luacheck_54.lua - runs Debian's luacheck (package lua-check, written
-- for Lua 5.1, its modules pure Lua under /usr/share/lua/5.1) on Lua 5.4,
-- for bench/lossless_runs.py:
--
--   lua_host bench/luacheck_54.lua [luacheck options] FILES...
--
-- luafilesystem, which luacheck requires, comes from the 5.4 C module
-- path (Debian's lua-filesystem ships it; lua_host exports the Lua API to
-- it). luacheck exits through os.exit: 0 clean, 1 warnings.
package.path = "/usr/share/lua/5.1/?.lua;/usr/share/lua/5.1/?/init.lua;"
  .. package.path
require("luacheck.main")
