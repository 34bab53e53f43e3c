import KinetraceJSON

extension DeclarationMutation {
    /// The declaration's JSON with this change made, or nil when the declaration has nothing it
    /// changes (no range to remove, say). The result is a declaration a host can run.
    package func apply(to text: [UInt8]) -> String? {
        guard case .success(var root) = JSONValue.parse(text), case .object(var top) = root,
              case .array(var kinds)? = top["messages"] else { return nil }
        var host = top["host"]?.objectValue ?? [:]
        var changed = false
        let listKeys = ["fields", "members", "arguments"]

        /// Edits every field of every kind; `edit` returns true when it changed one.
        func eachField(_ edit: (inout [String: JSONValue]) -> Bool) {
            for k in kinds.indices {
                guard var kind = kinds[k].objectValue else { continue }
                for key in listKeys {
                    guard case .array(var fields)? = kind[key] else { continue }
                    for f in fields.indices {
                        guard var field = fields[f].objectValue else { continue }
                        if edit(&field) { changed = true }
                        fields[f] = .object(field)
                    }
                    kind[key] = .array(fields)
                }
                kinds[k] = .object(kind)
            }
        }
        /// The first controller→host kind's fields.
        func sampleFields() -> [[String: JSONValue]] {
            for kind in kinds {
                guard let kind = kind.objectValue, kind["direction"]?.stringValue == "controller_to_host" else { continue }
                for key in listKeys { if case .array(let fields)? = kind[key] { return fields.compactMap(\.objectValue) } }
            }
            return []
        }
        let motionRoles = sampleFields().compactMap { $0["role"]?.stringValue }.filter {
            !["sender_time", "echo_time", "controller_id", "message_id"].contains($0)
        }

        switch self {
        case .thresholdUlp(let direction):
            guard let above = host["above"]?.doubleValue, let quantity = host["quantity"]?.stringValue else { return nil }
            let type = sampleFields().first { $0["role"]?.stringValue == quantity }?["type"]?.stringValue ?? "f64"
            let moved: Double
            switch type {
            case "f32", "f": moved = Double(direction > 0 ? Float32(above).nextUp : Float32(above).nextDown)
            case "number", "f64", "d": moved = direction > 0 ? above.nextUp : above.nextDown
            default: moved = above + Double(direction)
            }
            host["above"] = .number(moved)
            changed = true
        case .windowPercent(let percent):
            guard var window = host["window"]?.objectValue, let ms = window["ms"]?.integerValue else { return nil }
            window["ms"] = .integer(ms * Int64(percent) / 100)
            host["window"] = .object(window)
            changed = true
        case .staleJudged:
            changed = host.removeValue(forKey: "stale") != nil
        case .quantityAxisSwapped:
            guard let quantity = host["quantity"]?.stringValue, let dot = quantity.lastIndex(of: ".") else { return nil }
            let axis = quantity[quantity.index(after: dot)...]
            let other = String(quantity[..<dot]) + "." + (axis == "x" ? "y" : "x")
            guard motionRoles.contains(other) else { return nil }
            host["quantity"] = .string(other)
            changed = true
        case .rangesRemoved:
            eachField { $0.removeValue(forKey: "range") != nil }
        case .valuesUnchecked:
            eachField { f in
                let a = f.removeValue(forKey: "range") != nil
                let b = f.removeValue(forKey: "finite") != nil
                return a || b
            }
        case .checksRemoved:
            eachField { $0.removeValue(forKey: "check") != nil }
        case .repeatedMembersLast, .maximumLengthRaised, .byteOrderSwapped:
            for k in kinds.indices {
                guard var kind = kinds[k].objectValue else { continue }
                switch self {
                case .repeatedMembersLast where kind["repeated_members"] != nil:
                    kind["repeated_members"] = .string("last")
                    changed = true
                case .maximumLengthRaised(let n):
                    if let m = kind["max_length"]?.integerValue { kind["max_length"] = .integer(m + Int64(n)); changed = true }
                case .byteOrderSwapped:
                    if let order = kind["byte_order"]?.stringValue {
                        kind["byte_order"] = .string(order == "big" ? "little" : "big")
                        changed = true
                    }
                default: break
                }
                kinds[k] = .object(kind)
            }
            if case .maximumLengthRaised(let n) = self, var transport = top["transport"]?.objectValue, var framing = transport["framing"]?.objectValue,
               let m = framing["max_length"]?.integerValue {
                framing["max_length"] = .integer(m + Int64(n))
                transport["framing"] = .object(framing)
                top["transport"] = .object(transport)
            }
        case .motionRolesSwapped:
            // A role the host reports, swapped with another: the values it reports come from the wrong field.
            let reported = host["decision_values"].flatMap { v -> String? in if case .array(let a) = v { return a.first?.stringValue } else { return nil } }
            guard let a = reported ?? motionRoles.first, let b = motionRoles.first(where: { $0 != a }) else { return nil }
            eachField { f in
                switch f["role"]?.stringValue {
                case a?: f["role"] = .string(b); return true
                case b?: f["role"] = .string(a); return true
                default: return false
                }
            }
        case .replyFieldChanged:
            guard var reply = host["reply"]?.objectValue, var fields = reply["fields"]?.objectValue,
                  let name = fields.keys.sorted().first, let v = fields[name]?.doubleValue else { return nil }
            fields[name] = .number(v == 0 ? 1 : v / 2)
            reply["fields"] = .object(fields)
            host["reply"] = .object(reply)
            changed = true
        case .decisionValuesMoved:
            guard case .array(var values)? = host["decision_values"], let first = values.first?.stringValue,
                  let other = motionRoles.first(where: { r in !values.contains { $0.stringValue == r } }) else { return nil }
            values[values.firstIndex { $0.stringValue == first }!] = .string(other)
            host["decision_values"] = .array(values)
            changed = true
        }
        guard changed else { return nil }
        top["messages"] = .array(kinds)
        if !host.isEmpty { top["host"] = .object(host) }
        root = .object(top)
        return root.jsonText
    }
}
