import ArgumentParser
import KinetraceJSON
import KinetraceImpairment
import KinetraceReplay
import KinetraceSupport
import KinetraceTrace
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `kinetrace merge RECORD... -w OUT`: shard records into one trace in time order.
struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Merge traces, such as the records of replay shards, into one trace in time order.",
        discussion: """
            Merges the traces into the --write file, streaming, in memory bounded by what the \
            inputs record within the reorder window, not by how many inputs there are (their read \
            buffers share 8 MiB). Each input may be out of time order by up \
            to --window (a replay record writes its replies in batches, a few ms late): a record is \
            held until its trace has read one at least the window later, and at most --max-waiting \
            records (1,048,576 unless told; a few hundred bytes each) wait at once, in one input or all \
            together. A record further out of order, or one past that \
            bound, is a data error naming its file and line. Records at the same time keep the \
            order of the inputs on the command line, then their order in their file. The inputs \
            are read twice: once to check them and count their records, so a refused merge \
            writes nothing, then to write the merge.

            The inputs must name the same protocol, clock and capture point. The merged header \
            keeps every input's header under "shards", in input order. The output is \
            written gzip-compressed when its name ends in .gz. An input with no records is a warning; \
            inputs with no records at all are an error, and nothing is written.

            The summary (records per input, records written, the largest reordering seen and \
            the time span) is printed to standard output.

            Records of `replay --shard K/N` are checked as a set: the same N, seed and network \
            in every one, each shard once, and none missing (--allow-missing-shards merges an \
            incomplete set anyway, saying which shards it lacks).

            Exit status: 0 merged; 64 usage (writing over an input, an input given twice); \
            65 an input that is not a valid trace, out of order, of another protocol, clock or \
            capture point, too many records waiting, shard records that do not make one set, or no records at all; 66 an input is missing; 73 the output cannot \
            be created; 74 a read or write failed.
            """)

    @Argument(help: ArgumentHelp("The traces to merge: kinetrace trace v1 (JSON Lines, gzip-compressed or not).", valueName: "record"),
              completion: .file())
    var records: [String]

    @Option(name: [.customShort("w"), .customLong("write")],
            help: ArgumentHelp("The merged trace to write (tcpdump's -w); a name ending in .gz is written gzip-compressed.", valueName: "file"),
            completion: .file())
    var write: String

    @Option(help: ArgumentHelp("How far out of time order a record may be within its input, in seconds, from 0.001 to 3600.", valueName: "seconds"))
    var window: Double = 1

    @Option(name: .customLong("max-waiting"),
            help: ArgumentHelp("Records that may wait in the reorder windows of all inputs together, from 1 to \(Self.maximumWaitingRange.upperBound).", valueName: "records"))
    var maxWaiting: Int = TraceMerger.defaultMaximumWaiting

    /// Up to 16 million records: several GB at a few hundred bytes each.
    static let maximumWaitingRange = 1...(1 << 24)

    @Flag(name: .customLong("allow-missing-shards"), help: "Merge shard records even when some of the N shards are missing (they are named on standard error).")
    var allowMissingShards = false

    @OptionGroup var summaryFormat: SummaryFormatOptions

    func validate() throws {
        guard !records.isEmpty else { throw ValidationError("Name at least one trace to merge.") }
        guard window.isFinite, window >= 0.001, window <= 3600 else {
            throw ValidationError("--window must be a number of seconds from 0.001 to 3600.")
        }
        guard Self.maximumWaitingRange.contains(maxWaiting) else {
            throw ValidationError("--max-waiting must be a number of records from 1 to \(Self.maximumWaitingRange.upperBound).")
        }
        var outputInfo = stat()
        let outputExists = stat(write, &outputInfo) == 0
        var seen: [(dev: UInt64, ino: UInt64, path: String)] = []
        for path in records {
            var info = stat()
            guard stat(path, &info) == 0 else { continue }  // a missing input is reported when it is opened (66)
            // A pipe (`<(zcat …)`) is read once into a private copy (InputSpool), which the two passes read.
            let type = info.st_mode & S_IFMT
            if type == S_IFIFO || type == S_IFCHR || type == S_IFSOCK { continue }
            if outputExists, info.st_dev == outputInfo.st_dev, info.st_ino == outputInfo.st_ino {
                throw ValidationError("-w \(write) is the input \(path); writing would destroy it.")
            }
            let dev = UInt64(truncatingIfNeeded: info.st_dev), ino = UInt64(truncatingIfNeeded: info.st_ino)
            if let twin = seen.first(where: { $0.dev == dev && $0.ino == ino }) {
                throw ValidationError("\(path) is given twice (as \(twin.path)); merging it with itself would double its records.")
            }
            seen.append((dev, ino, path))
        }
    }

    var windowNs: Int64 {
        // In range by validate(): 1e6 to 3.6e12 ns.
        Int64((window * 1e9).rounded())
    }

    func run() throws {
        // Every input is open at once: thousands of shards need more than the usual 1,024 descriptors.
        DescriptorLimit.raiseToHardLimit()
        let merger = try reportingFailures { () throws(TraceError) -> TraceMerger in
            do throws(TraceError) {
                var readable: [String] = []
                for path in records { readable.append(try InputSpool.readablePath(path)) }
                return try TraceMerger(paths: readable, windowNs: windowNs, maximumWaiting: maxWaiting, maximumWaitingTotal: maxWaiting)
            } catch where error.code == .outOfOrder {
                throw TraceError(error.code, source: error.source, line: error.line, byteOffset: error.byteOffset,
                                 message: error.message + "; a larger --window takes it")
            }
        }
        for input in merger.scanned.inputs {
            if let truncation = input.truncation { printWarning("\(input.path): \(truncation); merging what precedes it") }
            if input.unknownRecords > 0 {
                printWarning("\(input.path): skipped \(input.unknownRecords) records of kinds this kinetrace does not know; they are not merged")
            }
            if input.records == 0 { printWarning("\(input.path) holds no records") }
        }
        try checkShardSet(merger.headers)
        guard merger.scanned.totalRecords > 0 else {
            printError("nothing to merge: \(records.count == 1 ? "the input holds no record" : "none of the \(records.count) inputs holds a record"); \(write) not written")
            throw ExitStatus.dataError
        }
        let header = merger.mergedHeader(created: RFC3339.string(fromNanoseconds: SystemClock.realtimeNs()))
        // A merge that fails part way removes what it wrote.
        // A signal while writing removes the unfinished output, as a failure does.
        let summary = try reportingFailures { () throws(TraceError) -> TraceMergeSummary in
            try PartialOutputs.writing(write) { () throws(TraceError) -> TraceMergeSummary in try merger.write(to: write, header: header) }
        }
        switch summaryFormat.format {
        case .text: print(Self.text(summary, output: write), terminator: "")
        case .json: print(Self.json(summary, output: write).jsonText)
        }
    }

    /// Shard records (`replay --shard`, whose header names its shard) must make one set: the
    /// same N, seed and inputs, each shard once, none missing unless allowed. A merge of two
    /// of three shards would otherwise pass for the whole replay.
    func checkShardSet(_ headers: [TraceHeader]) throws {
        let shards: [(path: String, shard: ReplayShard?, header: TraceHeader)] = zip(records, headers).map { path, header in
            guard case .string(let text) = header.extra["shard"] else { return (path, nil, header) }
            return (path, try? ReplayShard.parse(text, environment: [:]).get(), header)
        }
        guard let first = shards.first(where: { $0.header.extra["shard"] != nil }) else { return }
        func refuse(_ message: String) throws -> Never {
            printError(message)
            throw ExitStatus.dataError
        }
        for input in shards where input.shard == nil {
            if let value = input.header.extra["shard"] { try refuse("\(input.path): the header's shard \(value.jsonText) is not K/N") }
            try refuse("\(first.path) is a shard record but \(input.path) is not: merge a whole set of shards, or records that are not shards")
        }
        // Every input is a parsed shard from here on.
        let parsed = shards.map { (path: $0.path, shard: $0.shard!, header: $0.header) }
        let reference = parsed[0].shard
        for input in parsed {
            let shard = input.shard
            if shard.count != reference.count {
                try refuse("\(input.path) is shard \(shard) but \(first.path) is shard \(reference): one replay's shards share N")
            }
            // Not the inputs' paths: each machine may keep the input under a path of its own.
            for key in ["seed", "network"] where input.header.extra[key] != first.header.extra[key] {
                try refuse("\(input.path) and \(first.path) differ in \(key) (\(input.header.extra[key]?.jsonText ?? "none") against \(first.header.extra[key]?.jsonText ?? "none")): they are shards of different replays")
            }
        }
        var byIndex: [Int: String] = [:]
        for input in parsed {
            let shard = input.shard
            if let twin = byIndex[shard.index] { try refuse("shard \(shard) is given twice: \(twin) and \(input.path)") }
            byIndex[shard.index] = input.path
        }
        let count = reference.count
        let missing = (0..<count).filter { byIndex[$0] == nil }.map { ReplayShard(index: $0, count: count).description }
        guard !missing.isEmpty else { return }
        let list = missing.count > 10 ? missing.prefix(10).joined(separator: ", ") + " and \(missing.count - 10) more" : missing.joined(separator: ", ")
        if allowMissingShards {
            printWarning("merging \(byIndex.count) of \(count) shards: missing \(list)")
        } else {
            try refuse("\(byIndex.count) of \(count) shards given: missing \(list) (--allow-missing-shards merges them anyway)")
        }
    }

    static func text(_ summary: TraceMergeSummary, output: String) -> String {
        var out = ""
        let width = summary.inputs.map(\.path.count).max() ?? 0
        for input in summary.inputs {
            let padding = String(repeating: " ", count: max(0, width - input.path.count))
            var line = "Read       \(input.path)\(padding)  \(input.records) records"
            if input.largestReorderNs > 0 {
                line += ", reordered up to \(TraceMerger.describe(input.largestReorderNs))"
                if let at = input.largestReorderLine { line += " (line \(at))" }
            }
            out += line + "\n"
        }
        out += "Written    \(summary.recordsWritten) records from \(summary.inputs.count) files to \(output)\n"
        if let largest = summary.largestReorder {
            out += "Reordered  up to \(TraceMerger.describe(largest.largestReorderNs)) in \(largest.path), within the \(TraceMerger.describe(summary.windowNs)) window\n"
        } else {
            out += "Reordered  nothing: every input was in time order\n"
        }
        if let first = summary.firstNs, let last = summary.lastNs {
            out += "Span       \(RFC3339.string(fromNanoseconds: first)) to \(RFC3339.string(fromNanoseconds: last)) (\(TraceMerger.describe(last - first)))\n"
        }
        return out
    }

    static func json(_ summary: TraceMergeSummary, output: String) -> JSONValue {
        func optional(_ value: Int64?) -> JSONValue { value.map(JSONValue.integer) ?? .null }
        return .object([
            "output": .string(output),
            "records_written": .integer(Int64(summary.recordsWritten)),
            "window_ns": .integer(summary.windowNs),
            "largest_reorder_ns": .integer(summary.largestReorder?.largestReorderNs ?? 0),
            "first_t_ns": optional(summary.firstNs),
            "last_t_ns": optional(summary.lastNs),
            "inputs": .array(summary.inputs.map { input in
                .object([
                    "path": .string(input.path),
                    "records": .integer(Int64(input.records)),
                    "unknown_records": .integer(Int64(input.unknownRecords)),
                    "largest_reorder_ns": .integer(input.largestReorderNs),
                    "largest_reorder_line": input.largestReorderLine.map { .integer(Int64($0)) } ?? .null,
                    "first_t_ns": optional(input.firstNs),
                    "last_t_ns": optional(input.lastNs),
                    "truncation": input.truncation.map { .string($0.description) } ?? .null,
                ])
            }),
        ])
    }
}
