-- MotionLink v1 dissector for Wireshark / tshark (4.0 or later, Lua 5.2).
--
-- Normative spec: specs/motionlink-v1.md in the Kinetrace repository.
-- UDP, one message per datagram, little-endian; the datagram length alone
-- gives the kind: 36 bytes = MotionFrame, 20 bytes = HapticAck.
--
-- Install: copy into your personal Lua plugins folder
-- (Help > About Wireshark > Folders), or run
--   tshark -X lua_script:/path/to/motionlink.lua ...
-- See tools/wireshark/README.md for the fields and the limits.

local DEFAULT_PORT = 47110
local FRAME_SIZE, FRAME_CHECKED = 36, 32
local ACK_SIZE, ACK_CHECKED = 20, 16
-- ML-GESTURE-3's default threshold; only used for the trigger hint.
local TRIGGER_THRESHOLD = 0.5

local motionlink = Proto("MotionLink", "MotionLink v1 (Kinetrace IMU frames and haptic acks)")

-- Same numbering and labels as Wireshark's own checksum status fields
-- (proto_checksum_vals), so filters read the same way.
local CHECK_BAD, CHECK_GOOD = 0, 1
local check_status_names = { [0] = "Bad", [1] = "Good", [2] = "Unverified", [3] = "Not present" }

local f = {
    kind = ProtoField.string("motionlink.kind", "Kind",
        base.ASCII, "frame, ack, or invalid (neither 36 nor 20 bytes)"),
    t_ms = ProtoField.uint64("motionlink.t_ms", "t_ms", base.DEC,
        nil, nil, "Controller wall clock, ms since the UNIX epoch (ML-FRAME-4)"),
    t_utc = ProtoField.absolute_time("motionlink.t_utc", "t_ms as UTC time", base.UTC,
        "t_ms or echo_t_ms read as a UTC date and time"),
    ax = ProtoField.float("motionlink.ax", "ax (g)", "User acceleration x, g"),
    ay = ProtoField.float("motionlink.ay", "ay (g)", "User acceleration y, g"),
    az = ProtoField.float("motionlink.az", "az (g)", "User acceleration z, g"),
    wx = ProtoField.float("motionlink.wx", "wx (rad/s)", "Rotation rate x, rad/s"),
    wy = ProtoField.float("motionlink.wy", "wy (rad/s)", "Rotation rate y, rad/s"),
    wz = ProtoField.float("motionlink.wz", "wz (rad/s)", "Rotation rate z, rad/s"),
    echo_t_ms = ProtoField.uint64("motionlink.echo_t_ms", "echo_t_ms", base.DEC,
        nil, nil, "t_ms of the MotionFrame that triggered this ack"),
    intensity = ProtoField.float("motionlink.intensity", "Intensity", "Haptic intensity, in [0, 1]"),
    sharpness = ProtoField.float("motionlink.sharpness", "Sharpness", "Haptic sharpness, in [0, 1]"),
    check = ProtoField.uint32("motionlink.check", "Check", base.HEX,
        nil, nil, "CRC-32/ISO-HDLC of the preceding bytes, as sent"),
    check_computed = ProtoField.uint32("motionlink.check.computed", "Computed check", base.HEX,
        nil, nil, "CRC-32/ISO-HDLC computed by the dissector"),
    check_status = ProtoField.uint8("motionlink.check.status", "Check status", base.DEC,
        check_status_names, nil, "Whether the sent check matches the computed one"),
    valid = ProtoField.bool("motionlink.valid", "Valid", base.NONE,
        nil, nil, "Passes the spec's length, checksum and value checks (ML-VALID-1, ML-ACK-1..3)"),
    reason = ProtoField.string("motionlink.reason", "Invalidity reason", base.ASCII,
        "First failed check: invalid_length, crc_mismatch, non_finite or out_of_range"),
    trigger = ProtoField.bool("motionlink.trigger", "Trigger hint (ay > 0.5)", base.NONE,
        nil, nil, "Hint only: the real rule (ML-GESTURE-*) is per controller, drops stale frames "
            .. "and has a 400 ms refractory period, which a per-packet dissector cannot know"),
    payload = ProtoField.bytes("motionlink.payload", "Payload", base.SPACE,
        "Datagram that is neither a MotionFrame nor a HapticAck"),
}
motionlink.fields = f

local e = {
    invalid_length = ProtoExpert.new("motionlink.invalid_length.expert",
        "Invalid length", expert.group.MALFORMED, expert.severity.ERROR),
    crc_mismatch = ProtoExpert.new("motionlink.crc_mismatch.expert",
        "Checksum mismatch", expert.group.CHECKSUM, expert.severity.ERROR),
    non_finite = ProtoExpert.new("motionlink.non_finite.expert",
        "Non-finite float", expert.group.PROTOCOL, expert.severity.WARN),
    out_of_range = ProtoExpert.new("motionlink.out_of_range.expert",
        "Value out of range", expert.group.PROTOCOL, expert.severity.WARN),
    truncated = ProtoExpert.new("motionlink.truncated.expert",
        "Datagram not fully captured", expert.group.UNDECODED, expert.severity.NOTE),
}
motionlink.experts = { e.invalid_length, e.crc_mismatch, e.non_finite, e.out_of_range, e.truncated }

motionlink.prefs.port = Pref.uint("UDP port", DEFAULT_PORT,
    "UDP port the MotionLink host listens on (ML-TRANSPORT-2); traffic to or from it is decoded")

---------------------------------------------------------------------------
-- CRC-32/ISO-HDLC (zlib crc32): reflected polynomial 0xEDB88320,
-- init 0xFFFFFFFF, final XOR 0xFFFFFFFF. Table-driven, one byte at a time.

local crc_table = {}
for n = 0, 255 do
    local c = n
    for _ = 1, 8 do
        if bit32.band(c, 1) ~= 0 then
            c = bit32.bxor(0xEDB88320, bit32.rshift(c, 1))
        else
            c = bit32.rshift(c, 1)
        end
    end
    crc_table[n] = c
end

local function crc32(bytes)
    local crc = 0xFFFFFFFF
    for i = 1, #bytes do
        local index = bit32.band(bit32.bxor(crc, bytes:byte(i)), 0xFF)
        crc = bit32.bxor(crc_table[index], bit32.rshift(crc, 8))
    end
    return bit32.bxor(crc, 0xFFFFFFFF)
end

-- Self-check against the catalogue check value, once at load time.
assert(crc32("123456789") == 0xCBF43926, "motionlink.lua: CRC-32 self-check failed")

---------------------------------------------------------------------------
-- Helpers

-- Binary32 is NaN or infinite exactly when its exponent bits are all ones.
local function is_non_finite(range)
    return bit32.band(range:le_uint(), 0x7F800000) == 0x7F800000
end

-- Latest instant os.date and NSTime format sensibly (9999-12-31T23:59:59Z).
local MAX_UTC_SECONDS = 253402300799

-- Adds t_ms (or echo_t_ms) and its UTC reading; returns the value as text.
local function add_timestamp(tree, field, range)
    local item = tree:add_le(field, range)
    local value = range:le_uint64()
    local seconds = (value / 1000):tonumber()
    if seconds <= MAX_UTC_SECONDS then
        local millis = (value % 1000):tonumber()
        item:append_text(string.format(" (%s.%03d UTC)", os.date("!%Y-%m-%d %H:%M:%S", seconds), millis))
        tree:add(f.t_utc, range, NSTime.new(seconds, millis * 1000000)):set_generated()
    end
    return tostring(value)
end

-- Adds check, check.computed and check.status; returns true when they match.
local function add_check(tree, tvb, checked_size)
    local range = tvb:range(checked_size, 4)
    local sent = range:le_uint()
    local computed = crc32(tvb:raw(0, checked_size))
    local item = tree:add_le(f.check, range)
    tree:add(f.check_computed, range, computed):set_generated()
    local good = sent == computed
    tree:add(f.check_status, range, good and CHECK_GOOD or CHECK_BAD):set_generated()
    if good then
        item:append_text(" [correct]")
    else
        item:append_text(string.format(" [incorrect, should be 0x%08x]", computed))
        item:add_proto_expert_info(e.crc_mismatch, string.format(
            "CRC-32 of bytes 0..<%d is 0x%08x but check says 0x%08x (crc_mismatch)",
            checked_size, computed, sent))
    end
    return good
end

-- Adds one float field and flags NaN/inf. Returns the value, whether it is
-- finite, and the item.
local function add_float(tree, field, range, name)
    local item = tree:add_le(field, range)
    if is_non_finite(range) then
        item:add_proto_expert_info(e.non_finite, string.format(
            "%s is not finite (0x%08x: exponent bits all ones, NaN or infinity) (non_finite)",
            name, range:le_uint()))
        return range:le_float(), false, item
    end
    return range:le_float(), true, item
end

-- Adds the generated valid and reason fields.
local function conclude(tree, reason)
    local valid_item = tree:add(f.valid, reason == nil)
    valid_item:set_generated()
    if reason ~= nil then
        tree:add(f.reason, reason):set_generated()
    end
end

---------------------------------------------------------------------------
-- Messages

local function dissect_frame(tvb, tree)
    tree:add(f.kind, "frame"):set_generated()
    local t_text = add_timestamp(tree, f.t_ms, tvb:range(0, 8))
    local names = { "ax", "ay", "az", "wx", "wy", "wz" }
    local values = {}
    local first_non_finite = nil
    for i, name in ipairs(names) do
        local value, finite = add_float(tree, f[name], tvb:range(4 + 4 * i, 4), name)
        values[name] = value
        if not finite and first_non_finite == nil then first_non_finite = name end
    end
    local good = add_check(tree, tvb, FRAME_CHECKED)
    -- Spec order: length, checksum, then values; the first failure is the reason.
    local reason = nil
    if not good then
        reason = "crc_mismatch"
    elseif first_non_finite ~= nil then
        reason = "non_finite"
    end
    conclude(tree, reason)
    local ay = values.ay
    local hint = reason == nil and ay > TRIGGER_THRESHOLD
    tree:add(f.trigger, hint):set_generated()

    local summary = string.format("Frame t=%s ay=%.3f", t_text, ay)
    if reason == nil then
        return hint and (summary .. " [trigger hint]") or summary
    end
    return string.format("Invalid: %s (%s)", reason, summary)
end

local function dissect_ack(tvb, tree)
    tree:add(f.kind, "ack"):set_generated()
    local echo_text = add_timestamp(tree, f.echo_t_ms, tvb:range(0, 8))
    -- Field values are checked in wire order; the first failing field
    -- gives the reason, as in Kinetrace's codec.
    local value_reason = nil
    for _, spec in ipairs({ { "intensity", 8 }, { "sharpness", 12 } }) do
        local name, offset = spec[1], spec[2]
        local value, finite, item = add_float(tree, f[name], tvb:range(offset, 4), name)
        if not finite then
            value_reason = value_reason or "non_finite"
        elseif value < 0 or value > 1 then
            value_reason = value_reason or "out_of_range"
            item:add_proto_expert_info(e.out_of_range, string.format(
                "%s %g is outside [0, 1] (out_of_range)", name, value))
        end
    end
    local good = add_check(tree, tvb, ACK_CHECKED)
    local reason = nil
    if not good then
        reason = "crc_mismatch"
    else
        reason = value_reason
    end
    conclude(tree, reason)

    local summary = "Ack echo=" .. echo_text
    if reason == nil then return summary end
    return string.format("Invalid: %s (%s)", reason, summary)
end

local function dissect_invalid(tvb, tree, length)
    local kind_item = tree:add(f.kind, "invalid")
    kind_item:set_generated()
    if tvb:len() > 0 then
        tree:add(f.payload, tvb:range(0, tvb:len()))
    end
    kind_item:add_proto_expert_info(e.invalid_length, string.format(
        "Datagram is %d bytes: a MotionFrame is 36 and a HapticAck 20 (invalid_length)", length))
    conclude(tree, "invalid_length")
    return string.format("Invalid: invalid_length (%d byte%s)", length, length == 1 and "" or "s")
end

-- The capture's snapshot length cut the datagram: the kind is known, the
-- checks cannot be run, so neither valid nor reason is set.
local function dissect_truncated(tvb, tree, length, kind)
    local kind_item = tree:add(f.kind, kind)
    kind_item:set_generated()
    kind_item:add_proto_expert_info(e.truncated, string.format(
        "Only %d of the %s's %d bytes were captured; not checked", tvb:len(), kind, length))
    return string.format("Truncated %s (%d of %d bytes captured)", kind, tvb:len(), length)
end

function motionlink.dissector(tvb, pinfo, tree)
    -- The datagram's real length gives the kind (ML-TRANSPORT-4), even when
    -- the capture kept fewer bytes.
    local length = tvb:reported_len()
    pinfo.cols.protocol:set("MotionLink")
    local subtree = tree:add(motionlink, tvb:range(0, tvb:len()))
    local info
    if (length == FRAME_SIZE or length == ACK_SIZE) and tvb:len() < length then
        info = dissect_truncated(tvb, subtree, length, length == FRAME_SIZE and "frame" or "ack")
    elseif length == FRAME_SIZE then
        info = dissect_frame(tvb, subtree)
    elseif length == ACK_SIZE then
        info = dissect_ack(tvb, subtree)
    else
        info = dissect_invalid(tvb, subtree, length)
    end
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
        udp_port_table:remove(registered_port, motionlink)
    end
    if port ~= 0 then
        udp_port_table:add(port, motionlink)
    end
    registered_port = port
end

function motionlink.prefs_changed()
    if registered_port ~= motionlink.prefs.port then
        register_port(motionlink.prefs.port)
    end
end

register_port(DEFAULT_PORT)
udp_port_table:add_for_decode_as(motionlink)
