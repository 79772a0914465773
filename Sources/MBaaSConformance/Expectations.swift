import MBaaSCore

/// Checks a step's `expect` object against the step's result document.
enum Expectations {
    struct Mismatch: Error {
        var message: String
    }

    /// A malformed expectation is a mismatch, never a silent pass.
    private static func strings(_ value: JSON, _ key: String) throws(Mismatch) -> [String] {
        guard let items = value.arrayValue, let names = Optional(items.compactMap(\.stringValue)),
              names.count == items.count
        else { throw Mismatch(message: "expect.\(key) must be an array of strings") }
        return names
    }

    static func check(_ expect: JSONObject, against result: JSON) throws(Mismatch) {
        for (key, expected) in expect {
            switch key {
            case "fields": try checkFields(expected, result, exact: false)
            case "exactFields": try checkFields(expected, result, exact: true)
            case "absentFields":
                let names = try strings(expected, key)
                guard let fields = result["fields"]?.objectValue else {
                    throw Mismatch(message: "absentFields: the result is not a record: \(summary(result))")
                }
                for name in names {
                    if let v = fields[name] {
                        throw Mismatch(message: "field '\(name)' should be absent, got \(show(v))")
                    }
                }
            case "present":
                for path in try strings(expected, key) {
                    let v = try resolve(path, result)
                    if v == nil || v!.isNull { throw Mismatch(message: "\(path) is missing in \(summary(result))") }
                }
            case "match":
                guard let pairs = expected.objectValue else { throw Mismatch(message: "expect.match must be an object") }
                for (path, want) in pairs {
                    guard let got = try resolve(path, result) else {
                        throw Mismatch(message: "\(path): expected \(show(want)), but it is missing in \(summary(result))")
                    }
                    if !equal(want, got) { throw Mismatch(message: "\(path): expected \(show(want)), got \(show(got))") }
                }
            case "count":
                guard let want = expected.intValue else { throw Mismatch(message: "expect.count must be an integer") }
                guard let got = count(of: result) else {
                    throw Mismatch(message: "count: the result has nothing to count: \(summary(result))")
                }
                if got != Int(want) { throw Mismatch(message: "count: expected \(want), got \(got)\(idList(result))") }
            case "ids", "idSet":
                let want = try strings(expected, key)
                guard let records = result["records"]?.arrayValue else {
                    throw Mismatch(message: "\(key): the result has no records: \(summary(result))")
                }
                let got = records.map { $0["id"]?.stringValue ?? "<no id>" }
                let equal = key == "ids" ? got == want : got.sorted() == want.sorted()
                if !equal {
                    throw Mismatch(message: "\(key == "ids" ? "ids (in order)" : "ids (any order)"): expected [\(want.joined(separator: ", "))], got [\(got.joined(separator: ", "))]")
                }
            case "minPages":
                guard let want = expected.intValue else { throw Mismatch(message: "expect.minPages must be an integer") }
                let got = result["pages"]?.intValue ?? 0
                if got < want { throw Mismatch(message: "pages: expected at least \(want), got \(got)") }
            case "text":
                guard expected.stringValue != nil else { throw Mismatch(message: "expect.text must be a string") }
                let got = result["text"]
                if got?.stringValue != expected.stringValue {
                    throw Mismatch(message: "downloaded text: expected \(show(expected)), got \(got.map(show) ?? "non-UTF-8 bytes")")
                }
            case "base64":
                guard expected.stringValue != nil else { throw Mismatch(message: "expect.base64 must be a string") }
                let got = result["base64"]?.stringValue
                if got != expected.stringValue {
                    throw Mismatch(message: "downloaded bytes: expected base64 \(expected.stringValue ?? "?"), got \(got ?? "nothing")")
                }
            default:
                throw Mismatch(message: "unknown expectation '\(key)'")
            }
        }
    }

    private static func checkFields(_ expected: JSON, _ result: JSON, exact: Bool) throws(Mismatch) {
        let key = exact ? "exactFields" : "fields"
        guard let want = expected.objectValue else { throw Mismatch(message: "expect.\(key) must be an object") }
        guard let fields = result["fields"]?.objectValue else {
            throw Mismatch(message: "the result is not a record: \(summary(result))")
        }
        if exact {
            let extra = fields.keys.filter { want[$0] == nil }.sorted()
            if !extra.isEmpty {
                throw Mismatch(message: "exactFields: unexpected field(s) \(extra.joined(separator: ", ")) (\(extra.map { "\($0)=\(show(fields[$0]!))" }.joined(separator: ", ")))")
            }
        }
        for (name, w) in want {
            guard let got = fields[name] else {
                throw Mismatch(message: "field '\(name)': expected \(show(w)), but the field is missing (fields: \(fields.keys.sorted().joined(separator: ", ")))")
            }
            if !equal(w, got) { throw Mismatch(message: "field '\(name)': expected \(show(w)), got \(show(got))") }
        }
    }

    private static func resolve(_ path: String, _ result: JSON) throws(Mismatch) -> JSON? {
        do { return try JSONPath.resolve(path, in: result) } catch { throw Mismatch(message: "\(error)") }
    }

    /// Compares as neutral values (as values, below); JSON that is not a valid neutral value is
    /// compared semantically.
    static func equal(_ want: JSON, _ got: JSON) -> Bool {
        if let w = try? Value(json: want), let g = try? Value(json: got) { return equal(w, g) }
        return strictlyEqual(want, got)
    }

    /// JSON equality for documents that are not neutral values: key order ignored, ints only equal ints.
    static func strictlyEqual(_ want: JSON, _ got: JSON) -> Bool {
        switch (want, got) {
        case (.int(let a), .int(let b)): return a == b
        case (.int, _): return false
        case (.double(let a), .int(let b)): return Double(exactly: b) == a
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { strictlyEqual($0, $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { k, v in b[k].map { strictlyEqual(v, $0) } ?? false }
        default: return want == got
        }
    }

    /// An expected value against the value a backend returned:
    /// - an expected int equals only the same int (`50` is not `50.0`, and ints above 2^53 compare exactly);
    /// - an expected double equals a double or an int of the same numeric value (JSON cannot tell `5.0` from
    ///   `5`, so a vendor returning `5` for a stored `5.0` is right);
    /// - dates compare to the millisecond; arrays in order, objects by key, member by member; the rest by `==`.
    static func equal(_ want: Value, _ got: Value) -> Bool {
        switch (want, got) {
        case (.int(let a), .int(let b)): return a == b
        case (.int, _): return false
        case (.double(let a), .double(let b)): return a == b
        case (.double(let a), .int(let b)): return Double(exactly: b) == a
        case (.date(let a), .date(let b)): return ISO8601.millis(a) == ISO8601.millis(b)
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { equal($0, $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { k, v in b[k].map { equal(v, $0) } ?? false }
        default: return want == got
        }
    }

    private static func count(of result: JSON) -> Int? {
        for key in ["records", "files", "results"] {
            if let a = result[key]?.arrayValue { return a.count }
        }
        return result["count"]?.intValue.map(Int.init)
    }

    private static func idList(_ result: JSON) -> String {
        guard let records = result["records"]?.arrayValue else { return "" }
        return " (ids: " + records.map { $0["id"]?.stringValue ?? "?" }.joined(separator: ", ") + ")"
    }

    static func show(_ json: JSON) -> String {
        let text = json.printed([.sortedKeys])
        return text.count > 160 ? String(text.prefix(160)) + "..." : text
    }

    static func summary(_ json: JSON) -> String { StepInterpreter.summary(json) }
}
