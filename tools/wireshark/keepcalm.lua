-- KeepCalm JSON dissector for Wireshark / tshark (4.0 or later, Lua 5.2).
--
-- Normative spec: specs/keepcalm-json.md in the Kinetrace repository.
-- UDP, one JSON message per datagram (Kinetrace's mapping of the game's
-- MultipeerConnectivity session):
--   {"type":"MotionData","payload":{"id":"<UUID>","type":"Combined","x":…,"y":…,"z":…}}
-- The bytes go to Wireshark's own JSON dissector for the tree; this file
-- adds the KeepCalm fields and the spec's verdict, which it reaches with
-- the same checks, in the same order, as Kinetrace's codec
-- (Sources/Wire/KinetraceWire/KeepCalmJSON), so both name the same reason
-- at the same byte offset.
--
-- Install: copy into your personal Lua plugins folder
-- (Help > About Wireshark > Folders), or run
--   tshark -X lua_script:/path/to/keepcalm.lua ...
-- See tools/wireshark/README.md for the fields and the limits.

local DEFAULT_PORT = 47120
-- KC-SIZE-1 and KC-VALUE-2.
local MAXIMUM_SIZE = 4096
local MAXIMUM_MAGNITUDE = 100
-- The scanner's nesting limit, so the verdict on deep nesting matches.
local MAXIMUM_DEPTH = 256

local keepcalm = Proto("KeepCalm", "KeepCalm JSON (MultipeerKit MotionData over UDP)")

local f = {
    type = ProtoField.string("keepcalm.type", "Envelope type", base.UNICODE,
        "The envelope's \"type\" member when it is a string; \"MotionData\" when valid"),
    payload_type = ProtoField.string("keepcalm.payload_type", "Payload type", base.UNICODE,
        "The payload's \"type\" member when it is a string; \"Combined\" when valid"),
    id = ProtoField.string("keepcalm.id", "Message id", base.UNICODE,
        "The payload's \"id\" member when it is a string; an uppercase UUID when valid"),
    x = ProtoField.double("keepcalm.x", "x", "User acceleration x (g) plus rotation rate x (rad/s)"),
    y = ProtoField.double("keepcalm.y", "y", "User acceleration y (g) plus rotation rate y (rad/s)"),
    z = ProtoField.double("keepcalm.z", "z", "User acceleration z (g) plus rotation rate z (rad/s)"),
    valid = ProtoField.bool("keepcalm.valid", "Valid", base.NONE, nil, nil,
        "Passes the spec's length, JSON, schema and value checks"),
    reason = ProtoField.string("keepcalm.reason", "Invalidity reason", base.ASCII,
        "invalid_length, malformed, non_finite or out_of_range"),
    error_offset = ProtoField.uint32("keepcalm.error_offset", "Error offset", base.DEC, nil, nil,
        "Byte offset in the datagram where the first failed check applies"),
}
keepcalm.fields = f

local e = {
    invalid_length = ProtoExpert.new("keepcalm.invalid_length.expert",
        "Invalid length", expert.group.MALFORMED, expert.severity.ERROR),
    malformed = ProtoExpert.new("keepcalm.malformed.expert",
        "Not a KeepCalm message", expert.group.MALFORMED, expert.severity.ERROR),
    non_finite = ProtoExpert.new("keepcalm.non_finite.expert",
        "Non-finite value", expert.group.PROTOCOL, expert.severity.WARN),
    out_of_range = ProtoExpert.new("keepcalm.out_of_range.expert",
        "Value out of range", expert.group.PROTOCOL, expert.severity.WARN),
    truncated = ProtoExpert.new("keepcalm.truncated.expert",
        "Datagram not fully captured", expert.group.UNDECODED, expert.severity.NOTE),
}
keepcalm.experts = { e.invalid_length, e.malformed, e.non_finite, e.out_of_range, e.truncated }

keepcalm.prefs.port = Pref.uint("UDP port", DEFAULT_PORT,
    "UDP port the KeepCalm host listens on (KC-TRANSPORT-2); traffic to or from it is decoded")

local json_dissector = Dissector.get("json")

---------------------------------------------------------------------------
-- A JSON scanner that fails where Kinetrace's JSONScanner fails, with the
-- same offsets. Offsets are 0-based, as the codec's. A failure is raised
-- as a table { code, offset, expected } and caught by pcall.

local QUOTE, BACKSLASH = 0x22, 0x5C
local LBRACE, RBRACE, LBRACKET, RBRACKET = 0x7B, 0x7D, 0x5B, 0x5D
local COMMA, COLON, MINUS, PLUS, DOT, ZERO = 0x2C, 0x3A, 0x2D, 0x2B, 0x2E, 0x30

local function is_digit(byte) return byte ~= nil and byte >= 0x30 and byte <= 0x39 end

local function fail(code, offset, expected)
    error({ code = code, offset = offset, expected = expected }, 0)
end

local Scanner = {}
Scanner.__index = Scanner

local function new_scanner(text)
    return setmetatable({ s = text, n = #text, i = 0 }, Scanner)
end

function Scanner:byte(index) return self.s:byte(index + 1) end

function Scanner:syntax(message, offset)
    fail("malformed", offset or self.i, "JSON: " .. message)
end

function Scanner:skip_whitespace()
    while self.i < self.n do
        local b = self:byte(self.i)
        if b ~= 0x20 and b ~= 0x09 and b ~= 0x0A and b ~= 0x0D then return end
        self.i = self.i + 1
    end
end

function Scanner:peek()
    self:skip_whitespace()
    return self:byte(self.i)
end

function Scanner:expect(byte, what)
    if self:byte(self.i) == byte then self.i = self.i + 1; return end
    if self:peek() ~= byte then self:syntax("expected " .. what) end
    self.i = self.i + 1
end

function Scanner:expect_end()
    if self:peek() ~= nil then self:syntax("expected end of line after the JSON value") end
end

-- Consumes exactly `literal` (no whitespace first) if it is next.
function Scanner:consume(literal)
    if self.s:sub(self.i + 1, self.i + #literal) == literal then
        self.i = self.i + #literal
        return true
    end
    return false
end

function Scanner:match_literal(literal)
    self:peek()
    return self:consume(literal)
end

local function utf8_encode(scalar)
    if scalar < 0x80 then return string.char(scalar) end
    if scalar < 0x800 then
        return string.char(0xC0 + bit32.rshift(scalar, 6), 0x80 + bit32.band(scalar, 0x3F))
    end
    if scalar < 0x10000 then
        return string.char(0xE0 + bit32.rshift(scalar, 12), 0x80 + bit32.band(bit32.rshift(scalar, 6), 0x3F),
            0x80 + bit32.band(scalar, 0x3F))
    end
    return string.char(0xF0 + bit32.rshift(scalar, 18), 0x80 + bit32.band(bit32.rshift(scalar, 12), 0x3F),
        0x80 + bit32.band(bit32.rshift(scalar, 6), 0x3F), 0x80 + bit32.band(scalar, 0x3F))
end

function Scanner:read_hex4()
    if self.i + 4 > self.n then self:syntax("truncated \\u escape") end
    local value = 0
    for _ = 1, 4 do
        local b = self:byte(self.i)
        local digit
        if b >= 0x30 and b <= 0x39 then digit = b - 0x30
        elseif b >= 0x61 and b <= 0x66 then digit = b - 0x61 + 10
        elseif b >= 0x41 and b <= 0x46 then digit = b - 0x41 + 10
        else self:syntax("invalid hex digit in \\u escape") end
        value = value * 16 + digit
        self.i = self.i + 1
    end
    return value
end

local simple_escapes = { [0x22] = "\"", [0x5C] = "\\", [0x2F] = "/", [0x62] = "\b", [0x66] = "\f",
    [0x6E] = "\n", [0x72] = "\r", [0x74] = "\t" }

-- From the first content byte to the closing quote, escapes decoded.
function Scanner:decode_escaped()
    local out = {}
    while self.i < self.n do
        local b = self:byte(self.i)
        self.i = self.i + 1
        if b == QUOTE then return table.concat(out) end
        if b == BACKSLASH then
            if self.i >= self.n then break end
            local escape = self:byte(self.i)
            self.i = self.i + 1
            if simple_escapes[escape] then
                out[#out + 1] = simple_escapes[escape]
            elseif escape == 0x75 then
                local scalar = self:read_hex4()
                if scalar >= 0xD800 and scalar < 0xDC00 then
                    if not (self.i + 1 < self.n and self:byte(self.i) == BACKSLASH and self:byte(self.i + 1) == 0x75) then
                        self:syntax("unpaired surrogate in \\u escape")
                    end
                    self.i = self.i + 2
                    local low = self:read_hex4()
                    if low < 0xDC00 or low >= 0xE000 then self:syntax("unpaired surrogate in \\u escape") end
                    scalar = 0x10000 + (scalar - 0xD800) * 1024 + (low - 0xDC00)
                elseif scalar >= 0xDC00 and scalar < 0xE000 then
                    self:syntax("unpaired surrogate in \\u escape")
                end
                out[#out + 1] = utf8_encode(scalar)
            else
                self:syntax("invalid escape", self.i - 2)
            end
        elseif b < 0x20 then
            self:syntax("control character inside a string", self.i - 1)
        else
            out[#out + 1] = string.char(b)
        end
    end
    self:syntax("unterminated string")
end

-- A string token: its decoded text, whether it had escapes, and where its
-- opening quote is.
function Scanner:read_string()
    self:expect(QUOTE, "a string")
    local start = self.i
    local j = start
    while j < self.n do
        local b = self:byte(j)
        if b == QUOTE then
            self.i = j + 1
            return self.s:sub(start + 1, j), false, start - 1
        end
        if b == BACKSLASH then
            self.i = start
            return self:decode_escaped(), true, start - 1
        end
        if b < 0x20 then self:syntax("control character inside a string", j) end
        j = j + 1
    end
    self:syntax("unterminated string", start - 1)
end

-- Checks JSON's number grammar; returns the token's start and end (exclusive).
function Scanner:read_number()
    self:skip_whitespace()
    local start = self.i
    local i = start
    if self:byte(i) == MINUS then i = i + 1 end
    if not is_digit(self:byte(i)) then self:syntax("expected a number", start) end
    if self:byte(i) == ZERO then
        i = i + 1
    else
        repeat i = i + 1 until not is_digit(self:byte(i))
    end
    if self:byte(i) == DOT then
        i = i + 1
        if not is_digit(self:byte(i)) then self:syntax("expected a digit after '.'", i) end
        repeat i = i + 1 until not is_digit(self:byte(i))
    end
    local b = self:byte(i)
    if b == 0x65 or b == 0x45 then
        i = i + 1
        if self:byte(i) == PLUS or self:byte(i) == MINUS then i = i + 1 end
        if not is_digit(self:byte(i)) then self:syntax("expected a digit in exponent", i) end
        repeat i = i + 1 until not is_digit(self:byte(i))
    end
    self.i = i
    return start, i
end

-- The next member's key, or nil at the closing brace.
function Scanner:next_key(state)
    local found = self:peek()
    if found == RBRACE then self.i = self.i + 1; return nil end
    if not state.first then
        if found ~= COMMA then self:syntax("expected ',' or '}' in object") end
        self.i = self.i + 1
        if self:peek() ~= QUOTE then self:syntax("expected a member name after ','") end
    elseif found ~= QUOTE then
        self:syntax("expected a member name or '}'")
    end
    state.first = false
    local key = self:read_string()
    self:expect(COLON, "':' after member name")
    return key
end

function Scanner:skip_value(depth)
    if depth >= MAXIMUM_DEPTH then self:syntax("nesting deeper than " .. MAXIMUM_DEPTH) end
    local b = self:peek()
    if b == nil then self:syntax("expected a value, found end of line") end
    if b == LBRACE then
        self.i = self.i + 1
        local state = { first = true }
        while self:next_key(state) ~= nil do self:skip_value(depth + 1) end
    elseif b == LBRACKET then
        self.i = self.i + 1
        if self:peek() == RBRACKET then self.i = self.i + 1; return end
        while true do
            self:skip_value(depth + 1)
            local nxt = self:peek()
            if nxt == COMMA then
                self.i = self.i + 1
            elseif nxt == RBRACKET then
                self.i = self.i + 1
                return
            else
                self:syntax("expected ',' or ']' in array")
            end
        end
    elseif b == QUOTE then
        self:read_string()
    elseif b == 0x74 or b == 0x66 then
        if not (self:match_literal("true") or self:match_literal("false")) then
            self:syntax("expected value to be true or false")
        end
    elseif b == 0x6E then
        if not self:match_literal("null") then self:syntax("expected a value") end
    else
        if b ~= MINUS and not is_digit(b) then self:syntax("expected a value") end
        self:read_number()
    end
end

-- KC-MSG-6: the offset of the first byte of the first ill-formed UTF-8
-- sequence (RFC 3629: no overlongs, surrogates, code points above U+10FFFF,
-- stray continuation bytes or cut sequences), or nil when all is well-formed.
local function first_invalid_utf8(text)
    local n = #text
    local i = 1
    while i <= n do
        local lead = text:byte(i)
        if lead < 0x80 then
            i = i + 1
        else
            -- The length, and the range of the second byte (what rules out
            -- overlongs, surrogates and > U+10FFFF).
            local length, low, high = nil, 0x80, 0xBF
            if lead >= 0xC2 and lead <= 0xDF then length = 2
            elseif lead == 0xE0 then length, low = 3, 0xA0
            elseif lead == 0xED then length, high = 3, 0x9F
            elseif lead >= 0xE1 and lead <= 0xEF then length = 3
            elseif lead == 0xF0 then length, low = 4, 0x90
            elseif lead == 0xF4 then length, high = 4, 0x8F
            elseif lead >= 0xF1 and lead <= 0xF3 then length = 4
            end
            if length == nil or i + length - 1 > n then return i - 1 end
            local second = text:byte(i + 1)
            if second < low or second > high then return i - 1 end
            for k = 2, length - 1 do
                local b = text:byte(i + k)
                if b < 0x80 or b > 0xBF then return i - 1 end
            end
            i = i + length
        end
    end
    return nil
end

---------------------------------------------------------------------------
-- The message (KC-MSG-*, KC-VALUE-*): the codec's checks in its order.
-- Fields go into `tree` as they are read, so an invalid message shows
-- everything up to its first failure.

local NON_FINITE_TEXTS = { nan = true, inf = true, ["-inf"] = true, ["+inf"] = true,
    infinity = true, ["-infinity"] = true, ["+infinity"] = true }

local function is_uuid(text)
    if #text ~= 36 then return false end
    for k = 1, 36 do
        local b = text:byte(k)
        if k == 9 or k == 14 or k == 19 or k == 24 then
            if b ~= MINUS then return false end
        elseif not (is_digit(b) or (b >= 0x41 and b <= 0x46)) then
            return false
        end
    end
    return true
end

local Message = {}
Message.__index = Message

-- Adds a string member's text when the value is a string, for display only.
function Message:show_string(field, at)
    local saved = self.sc.i
    local ok, text = pcall(Scanner.read_string, self.sc)
    if ok then self.tree:add(field, self.tvb:range(at, self.sc.i - at), text) end
    self.sc.i = saved
end

function Message:uuid(at)
    local sc = self.sc
    if sc:peek() ~= QUOTE then fail("malformed", at, "\"id\" a UUID string") end
    -- Escapes decoded (KC-MSG-7): "\u0030" is the digit 0.
    local text = sc:read_string()
    self.tree:add(f.id, self.tvb:range(at, sc.i - at), text)
    if not is_uuid(text) then
        fail("malformed", at, "\"id\" an uppercase UUID, 8-4-4-4-12 hex digits")
    end
end

function Message:number(name, at)
    local sc = self.sc
    if sc:peek() == QUOTE then
        -- JSONEncoder's nonConformingFloatEncodingStrategy writes NaN and infinities as strings.
        local ok, text = pcall(Scanner.read_string, sc)
        if not ok then text = "" end
        local code = NON_FINITE_TEXTS[text:lower()] and "non_finite" or "malformed"
        fail(code, at, "\"" .. name .. "\" a finite JSON number")
    end
    local b = sc:peek()
    if b ~= MINUS and not is_digit(b) then fail("malformed", at, "\"" .. name .. "\" a JSON number") end
    local start, stop = sc:read_number()
    local value = tonumber(self.text:sub(start + 1, stop))
    self.tree:add(f[name], self.tvb:range(start, stop - start), value)
    self.values[name] = value
    if value ~= value or math.abs(value) > MAXIMUM_MAGNITUDE then
        fail("out_of_range", at, "\"" .. name .. "\" within ±" .. MAXIMUM_MAGNITUDE)
    end
end

-- Whether the next value is the string `text`, escapes decoded (KC-MSG-7).
function Message:string_is(text)
    local sc = self.sc
    if sc:consume("\"" .. text .. "\"") then return true end
    if sc:peek() ~= QUOTE then return false end
    local saved = sc.i
    local found = sc:read_string()
    if found == text then return true end
    sc.i = saved
    return false
end

function Message:payload()
    local sc = self.sc
    local start = sc.i
    sc:expect(LBRACE, "'{'")
    local state = { first = true }
    local seen = {}
    local unknown = {}
    while true do
        local key_at = sc.i
        local key = sc:next_key(state)
        if key == nil then break end
        sc:skip_whitespace()
        local at = sc.i
        if key == "id" then
            if seen.id then fail("malformed", key_at, "one \"id\" member") end
            seen.id = true
            self:uuid(at)
        elseif key == "type" then
            if seen.type then fail("malformed", key_at, "one payload \"type\" member") end
            seen.type = true
            if not self:string_is("Combined") then
                self:show_string(f.payload_type, at)
                fail("malformed", at, "payload \"type\" the string \"Combined\"")
            end
            self.tree:add(f.payload_type, self.tvb:range(at, sc.i - at), "Combined")
        elseif key == "x" or key == "y" or key == "z" then
            if seen[key] then fail("malformed", key_at, "one \"" .. key .. "\" member") end
            seen[key] = true
            self:number(key, at)
        else
            -- KC-MSG-3: names compared decoded, as read.
            if unknown[key] then fail("malformed", key_at, "each payload member name once") end
            unknown[key] = true
            sc:skip_value(2)
        end
        sc:skip_whitespace()
    end
    for _, name in ipairs({ "id", "type", "x", "y", "z" }) do
        if not seen[name] then fail("malformed", start, "payload member \"" .. name .. "\"") end
    end
end

function Message:envelope()
    local sc = self.sc
    sc:skip_whitespace()
    if sc:peek() ~= LBRACE then fail("malformed", sc.i, "a JSON object") end
    sc:expect(LBRACE, "'{'")
    local state = { first = true }
    local saw_type, saw_payload = false, false
    local unknown = {}
    while true do
        local key_at = sc.i
        local key = sc:next_key(state)
        if key == nil then break end
        sc:skip_whitespace()
        local at = sc.i
        if key == "type" then
            if saw_type then fail("malformed", key_at, "one \"type\" member") end
            saw_type = true
            if not self:string_is("MotionData") then
                self:show_string(f.type, at)
                fail("malformed", at, "\"type\" the string \"MotionData\"")
            end
            self.tree:add(f.type, self.tvb:range(at, sc.i - at), "MotionData")
        elseif key == "payload" then
            if saw_payload then fail("malformed", key_at, "one \"payload\" member") end
            if sc:peek() ~= LBRACE then fail("malformed", at, "\"payload\" an object") end
            self:payload()
            saw_payload = true
        else
            if unknown[key] then fail("malformed", key_at, "each member name once") end
            unknown[key] = true
            sc:skip_value(1)
        end
        sc:skip_whitespace()
    end
    sc:expect_end()
    if not saw_type then fail("malformed", sc.n, "a \"type\" member") end
    if not saw_payload then fail("malformed", sc.n, "a \"payload\" member") end
end

-- Checks the datagram; returns nil when valid, else the failure table.
local function check(tvb, tree, values)
    local length = tvb:reported_len()
    if length == 0 or length > MAXIMUM_SIZE then
        return { code = "invalid_length", offset = length,
            expected = "a JSON message of 1 to " .. MAXIMUM_SIZE .. " bytes" }
    end
    local text = tvb:raw(0, length)
    local bad = first_invalid_utf8(text)
    if bad ~= nil then return { code = "malformed", offset = bad, expected = "well-formed UTF-8" } end
    local message = setmetatable({ sc = new_scanner(text), text = text, tvb = tvb, tree = tree, values = values }, Message)
    local ok, failure = pcall(Message.envelope, message)
    if ok then return nil end
    if type(failure) ~= "table" then error(failure, 0) end  -- a bug here, not in the packet
    return failure
end

---------------------------------------------------------------------------

function keepcalm.dissector(tvb, pinfo, tree)
    local length = tvb:reported_len()
    pinfo.cols.protocol:set("KeepCalm")
    local subtree = tree:add(keepcalm, tvb:range(0, tvb:len()))
    local info
    if length > 0 and length <= MAXIMUM_SIZE and tvb:len() < length then
        subtree:add_proto_expert_info(e.truncated, string.format(
            "Only %d of the datagram's %d bytes were captured; not checked", tvb:len(), length))
        info = string.format("Truncated (%d of %d bytes captured)", tvb:len(), length)
    else
        local values = {}
        local failure = check(tvb, subtree, values)
        subtree:add(f.valid, failure == nil):set_generated()
        if failure == nil then
            info = string.format("MotionData x=%.3f y=%.3f z=%.3f", values.x, values.y, values.z)
        else
            subtree:add(f.reason, failure.code):set_generated()
            subtree:add(f.error_offset, failure.offset):set_generated()
            subtree:add_proto_expert_info(e[failure.code], string.format(
                "At byte %d: expected %s (%s)", failure.offset, failure.expected, failure.code))
            if failure.code == "invalid_length" then
                info = string.format("Invalid: invalid_length (%d byte%s)", length, length == 1 and "" or "s")
            else
                info = string.format("Invalid: %s at byte %d", failure.code, failure.offset)
                local known = {}
                for _, name in ipairs({ "x", "y", "z" }) do
                    if values[name] ~= nil then known[#known + 1] = string.format("%s=%.3f", name, values[name]) end
                end
                if #known > 0 then info = info .. " (" .. table.concat(known, " ") .. ")" end
            end
        end
        -- Wireshark's JSON tree below ours; it may set the columns, so they are set after.
        if json_dissector ~= nil and tvb:len() > 0 and length <= MAXIMUM_SIZE then
            pcall(Dissector.call, json_dissector, tvb, pinfo, subtree)
        end
    end
    pinfo.cols.protocol:set("KeepCalm")
    pinfo.cols.info:set(info)
    subtree:append_text(", " .. info)
    return tvb:len()
end

---------------------------------------------------------------------------
-- Registration: the port preference, plus "Decode As" for any other port.

local udp_port_table = DissectorTable.get("udp.port")
local registered_port = nil

local function register_port(port)
    if registered_port ~= nil and registered_port ~= 0 then
        udp_port_table:remove(registered_port, keepcalm)
    end
    if port ~= 0 then
        udp_port_table:add(port, keepcalm)
    end
    registered_port = port
end

function keepcalm.prefs_changed()
    if registered_port ~= keepcalm.prefs.port then
        register_port(keepcalm.prefs.port)
    end
end

register_port(DEFAULT_PORT)
udp_port_table:add_for_decode_as(keepcalm)
