import Foundation
import KinetraceConformance
import KinetraceTestSupport
import Testing

/// Issue 27, item 2: the conform report's shape is written once, as `ConformanceReport`; the
/// JSON schema is held to that type, member for member, and the CLI's output decodes into it.
@Suite struct ReportTypeSchemaTests {
    static var schemaURL: URL { Fixture.packageRoot.appendingPathComponent("specs/conform-report-v2.schema.json") }

    /// A document with every member present, one case with a detail and one without.
    static var fullDocument: [String: Any] {
        get throws {
            let dir = try Fixture.temporaryDirectory()
            defer { Fixture.remove(dir) }
            let out = dir.appendingPathComponent("r.json").path
            let run = try kinetrace(["conform", "--capture", Fixture.bundledTrace, "--format", "json", "--out", out])
            // The bundled capture fails a passive case (exit 1): a report either way.
            #expect(run.status == 0 || run.status == 1, "\(run.stderr)")
            let data = try Data(contentsOf: URL(fileURLWithPath: out))
            // Through the type and back: what is written is exactly what the type encodes.
            let report = try JSONDecoder().decode(ConformanceReport.self, from: data)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let again = try encoder.encode(report)
            let written = try JSONSerialization.jsonObject(with: data) as! NSDictionary
            let reencoded = try JSONSerialization.jsonObject(with: again) as! NSDictionary
            #expect(written == reencoded, "the CLI's report is the type's encoding")
            return try #require(JSONSerialization.jsonObject(with: again) as? [String: Any])
        }
    }

    static func properties(_ schema: [String: Any]) -> Set<String> {
        Set((schema["properties"] as? [String: Any] ?? [:]).keys)
    }

    static func required(_ schema: [String: Any]) -> Set<String> {
        Set(schema["required"] as? [String] ?? [])
    }

    @Test func theSchemaDescribesExactlyTheTypesMembers() throws {
        let schema = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Self.schemaURL)) as? [String: Any])
        let document = try Self.fullDocument
        let top = Set(document.keys)
        #expect(top == Self.properties(schema), "top level: type \(top.sorted()), schema \(Self.properties(schema).sorted())")
        #expect(Self.required(schema).isSubset(of: top), "a required member the type does not write: \(Self.required(schema).subtracting(top))")

        let parametersSchema = try #require((schema["properties"] as? [String: Any])?["parameters"] as? [String: Any])
        let parameters = Set(try #require(document["parameters"] as? [String: Any]).keys)
        #expect(parameters == Self.properties(parametersSchema), "parameters: type \(parameters.sorted()), schema \(Self.properties(parametersSchema).sorted())")

        let caseSchema = try #require(((schema["properties"] as? [String: Any])?["cases"] as? [String: Any])?["items"] as? [String: Any])
        let cases = try #require(document["cases"] as? [[String: Any]])
        #expect(cases.count > 1)
        for c in cases {
            #expect(Set(c.keys) == Self.properties(caseSchema), "case \(c["id"] ?? "?"): \(Set(c.keys).symmetricDifference(Self.properties(caseSchema)))")
            #expect(Self.required(caseSchema).isSubset(of: Set(c.keys)))
        }
        // `detail` is written as null for a PASS, never left out.
        let pass = try #require(cases.first { $0["verdict"] as? String == "PASS" })
        #expect(pass["detail"] is NSNull)
    }

    /// The type's encoding of a run validates against the schema with an independent validator.
    @Test func theTypesEncodingValidates() throws {
        let dir = try Fixture.temporaryDirectory()
        defer { Fixture.remove(dir) }
        let path = dir.appendingPathComponent("doc.json")
        try JSONSerialization.data(withJSONObject: try Self.fullDocument).write(to: path)
        let check = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.validate(json.load(open(sys.argv[2])), schema, cls=jsonschema.Draft202012Validator)
            print("valid")
            """
        let result = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", check, Self.schemaURL.path, path.path])
        #expect(result.status == 0 && result.stdout == "valid\n", "\(result.stdout)\(result.stderr)")
    }
}
