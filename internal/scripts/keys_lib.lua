-- keys_lib: the "declare or ask" protocol of the scripts whose keys depend
-- on what only the script sees: an RWMutex's read timeout keys, which
-- Redisson names after each read hold's field and count. Every key a script
-- touches arrives in KEYS, so the caller declares, after the fixed KEYS, the
-- keys it expects the call to need (from what it knows, and from what the
-- lock's last call needed). The script first works out every key it needs,
-- reading declared keys only; when one of them was not declared, it writes
-- nothing and replies {'keys', name...}: every key it needs beyond the fixed
-- ones, for the caller's next attempt to declare (scripts.Runner.declaring).
--
-- An attempt that asks changes nothing, so a copy of it arriving late is
-- harmless, and the next attempt is the same call again (the same hold, the
-- same counts, the same latch) with more keys: whatever one attempt may do,
-- the protocol adds nothing to it.

-- declared returns a table of the names in KEYS[from] to KEYS[to] (to:
-- the last of KEYS when nil), each to its index.
local function declared(from, to)
	local at = {}
	for i = from, to or #KEYS do
		at[KEYS[i]] = i
	end
	return at
end

-- undeclared reports whether one of names is not in at.
local function undeclared(at, names)
	for _, name in ipairs(names) do
		if not at[name] then
			return true
		end
	end
	return false
end

-- ask returns the reply that asks for names: {'keys', name...}.
local function ask(names)
	local reply = {'keys'}
	for _, name in ipairs(names) do
		reply[#reply + 1] = name
	end
	return reply
end
