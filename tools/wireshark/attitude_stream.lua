-- Attitude stream dissector for Wireshark / tshark (4.0 or later, Lua 5.2).
--
-- Normative spec: specs/attitude-stream.md in the Kinetrace repository.
-- The 3D mouse writes 12-byte records back to back on one TCP connection:
-- roll, pitch and yaw as little-endian float32, in radians, nothing else.
-- Records are cut at 12-byte offsets from the start of the stream, whatever
-- the segments, so this dissector asks Wireshark's TCP layer to reassemble
-- a record split across segments (pinfo.desegment_len) and shows every
-- record of a segment that carries many.
--
-- Install: copy into your personal Lua plugins folder
-- (Help > About Wireshark > Folders), or run
--   tshark -X lua_script:/path/to/attitude_stream.lua ...
-- See tools/wireshark/README.md for the fields and the limits.

local DEFAULT_PORT = 47130
local RECORD_SIZE = 12
-- π and π/2 rounded to the nearest float32 (0x40490FDB, 0x3FC90FDB), the
-- bounds the spec (AS-VALUE-2) and Kinetrace's codec compare float32 values with.
local PI_F32 = 13176795 / 4194304
local HALF_PI_F32 = 13176795 / 8388608

local attitude = Proto("Attitude", "Attitude stream (3D mouse roll/pitch/yaw records over TCP)")

local f = {
    index = ProtoField.uint64("attitude.index", "Record index", base.DEC, nil, nil,
        "Position of the record in its stream, from 0 (the offset divided by 12)"),
    offset = ProtoField.uint64("attitude.offset", "Stream offset", base.DEC, nil, nil,
        "Offset of the record's first byte from the start of the TCP stream"),
    roll = ProtoField.float("attitude.roll", "Roll (rad)", "Roll, radians, in [−π, π]"),
    pitch = ProtoField.float("attitude.pitch", "Pitch (rad)", "Pitch, radians, in [−π/2, π/2]"),
    yaw = ProtoField.float("attitude.yaw", "Yaw (rad)", "Yaw, radians, in [−π, π]"),
    roll_deg = ProtoField.double("attitude.roll_deg", "Roll (°)", "Roll in degrees"),
    pitch_deg = ProtoField.double("attitude.pitch_deg", "Pitch (°)", "Pitch in degrees"),
    yaw_deg = ProtoField.double("attitude.yaw_deg", "Yaw (°)", "Yaw in degrees"),
    valid = ProtoField.bool("attitude.valid", "Valid", base.NONE, nil, nil,
        "Finite, roll and yaw within [−π, π], pitch within [−π/2, π/2] (compared in float32)"),
    reason = ProtoField.string("attitude.reason", "Invalidity reason", base.ASCII,
        "First failed check: non_finite or out_of_range"),
}
attitude.fields = f

local e = {
    non_finite = ProtoExpert.new("attitude.non_finite.expert",
        "Non-finite float", expert.group.PROTOCOL, expert.severity.WARN),
    out_of_range = ProtoExpert.new("attitude.out_of_range.expert",
        "Value out of range", expert.group.PROTOCOL, expert.severity.WARN),
    gap = ProtoExpert.new("attitude.gap.expert",
        "Record start missing", expert.group.SEQUENCE, expert.severity.WARN),
    mid_stream = ProtoExpert.new("attitude.mid_stream.expert",
        "Capture starts mid-stream", expert.group.SEQUENCE, expert.severity.NOTE),
}
attitude.experts = { e.non_finite, e.out_of_range, e.gap, e.mid_stream }

attitude.prefs.port = Pref.uint("TCP port", DEFAULT_PORT,
    "TCP port the attitude host listens on (AS-TRANSPORT-2); traffic to or from it is decoded")

local tcp_seq = Field.new("tcp.seq")
local tcp_len = Field.new("tcp.len")
-- Wireshark's conversation completeness; bit 0 is set once the SYN was seen.
local tcp_completeness = Field.new("tcp.completeness")
local COMPLETENESS_SYN = 1

-- The last value of a field in this frame (the innermost TCP header).
local function last(field)
    local values = { field() }
    if #values == 0 then return nil end
    return values[#values].value
end

-- Binary32 is NaN or infinite exactly when its exponent bits are all ones.
local function is_non_finite(range)
    return bit32.band(range:le_uint(), 0x7F800000) == 0x7F800000
end

local NAMES = { "roll", "pitch", "yaw" }
local BOUNDS = { roll = PI_F32, pitch = HALF_PI_F32, yaw = PI_F32 }
-- No commas: tshark joins repeated fields with them.
local BOUND_TEXT = { roll = "±π", pitch = "±π/2", yaw = "±π" }

-- One record; returns its reason (nil when valid) and a summary.
local function dissect_record(range, stream_offset, tree, offset_trusted)
    local subtree = tree:add(attitude, range)
    local index = math.floor(stream_offset / RECORD_SIZE)
    subtree:add(f.index, range, UInt64(index)):set_generated()
    local offset_item = subtree:add(f.offset, range, UInt64(stream_offset))
    offset_item:set_generated()
    if not offset_trusted then
        offset_item:add_proto_expert_info(e.mid_stream, "No SYN in the capture before this record: offsets count from the first byte "
            .. "captured and may not fall on record boundaries")
    end
    local values, items = {}, {}
    for k, name in ipairs(NAMES) do
        local value_range = range:range(4 * (k - 1), 4)
        items[name] = subtree:add_le(f[name], value_range)
        values[name] = value_range:le_float()
        subtree:add(f[name .. "_deg"], value_range, values[name] * 180 / math.pi):set_generated()
    end
    -- The codec's order: field by field in wire order, finiteness before range.
    local reason, message, item
    for k, name in ipairs(NAMES) do
        local value_range = range:range(4 * (k - 1), 4)
        if is_non_finite(value_range) then
            reason, item = "non_finite", items[name]
            message = string.format("%s is not finite (0x%08x: exponent bits all ones: NaN or infinity) (non_finite)",
                name, value_range:le_uint())
            break
        elseif math.abs(values[name]) > BOUNDS[name] then
            reason, item = "out_of_range", items[name]
            message = string.format("%s %.9g is beyond %s (out_of_range)", name, values[name], BOUND_TEXT[name])
            break
        end
    end
    subtree:add(f.valid, reason == nil):set_generated()
    if reason ~= nil then
        subtree:add(f.reason, reason):set_generated()
        item:add_proto_expert_info(e[reason], message)
    end
    local summary = string.format("#%d roll=%.3f pitch=%.3f yaw=%.3f", index, values.roll, values.pitch, values.yaw)
    subtree:append_text(", Record " .. summary .. (reason and (" [" .. reason .. "]") or ""))
    return reason, index
end

function attitude.dissector(tvb, pinfo, tree)
    local length = tvb:len()
    if length == 0 then return 0 end
    -- Where the tvb's first byte sits in the stream. TCP hands over either
    -- a reassembled record (a new data source: offset 0 in it) or the rest
    -- of the segment, which ends where the segment ends. Relative sequence
    -- numbers start at 1 after the SYN.
    local seq, segment_length = last(tcp_seq), last(tcp_len)
    if seq == nil or segment_length == nil then return 0 end
    local segment_start = seq - 1
    local base
    if tvb:offset() == 0 then
        base = segment_start - segment_start % RECORD_SIZE
    else
        base = segment_start + segment_length - tvb:reported_len()
    end

    local first_index, last_index, invalid, count = nil, nil, 0, 0
    local offset = 0
    local handshake_seen = bit32.band(last(tcp_completeness) or 0, COMPLETENESS_SYN) ~= 0
    local misaligned = base % RECORD_SIZE
    if misaligned ~= 0 then
        -- The record these bytes finish began in a segment TCP did not hand
        -- over (missing, or out of order without out-of-order reassembly).
        local skipped = math.min(RECORD_SIZE - misaligned, length)
        local item = tree:add(attitude, tvb:range(0, skipped))
        item:append_text(string.format(", %d byte%s of record #%d, whose start is missing",
            skipped, skipped == 1 and "" or "s", math.floor(base / RECORD_SIZE)))
        item:add_proto_expert_info(e.gap, string.format(
            "Stream offset %d is inside record #%d (its first bytes were not reassembled): "
                .. "skipped to the next record boundary (stream_gap)", base, math.floor(base / RECORD_SIZE)))
        offset = skipped
    end
    while offset < length do
        local remaining = length - offset
        if remaining < RECORD_SIZE then
            -- The rest of the record is in a later segment.
            pinfo.desegment_offset = offset
            pinfo.desegment_len = RECORD_SIZE - remaining
            break
        end
        -- Without the handshake, say so once per call, on its first record.
        local reason, index = dissect_record(tvb:range(offset, RECORD_SIZE), base + offset, tree,
            handshake_seen or count > 0)
        first_index = first_index or index
        last_index = index
        count = count + 1
        if reason ~= nil then invalid = invalid + 1 end
        offset = offset + RECORD_SIZE
    end
    if count > 0 then
        pinfo.cols.protocol:set("Attitude")
        local text
        if count == 1 then
            text = string.format("Record #%d", first_index)
        else
            text = string.format("Records #%d–#%d", first_index, last_index)
        end
        if invalid > 0 then text = text .. string.format(" (%d invalid)", invalid) end
        pinfo.cols.info:append((tostring(pinfo.cols.info):find("Record", 1, true) and ", " or " ") .. text)
    end
    return length
end

---------------------------------------------------------------------------
-- Registration: the port preference, plus "Decode As" for any other port.

local tcp_port_table = DissectorTable.get("tcp.port")
local registered_port = nil

local function register_port(port)
    if registered_port ~= nil and registered_port ~= 0 then
        tcp_port_table:remove(registered_port, attitude)
    end
    if port ~= 0 then
        tcp_port_table:add(port, attitude)
    end
    registered_port = port
end

function attitude.prefs_changed()
    if registered_port ~= attitude.prefs.port then
        register_port(attitude.prefs.port)
    end
end

register_port(DEFAULT_PORT)
tcp_port_table:add_for_decode_as(attitude)
