import Foundation
import GRDB
import MBaaSCore

/// Compiles a neutral ``Query`` into SQLite SQL over the `records` table (aliased `r`).
///
/// Field keys become JSON1 path literals inlined in the SQL (`json_extract(r.fields, '$."meta"."level"')`), so
/// expression indexes made by ``LocalBackend/createIndex(className:key:)`` match; values are always bound
/// parameters. The metadata keys `id`, `createdAt` and `updatedAt` map to their columns.
///
/// Semantics, per operator (see ``QueryPredicate``):
/// - `eq`: same type and value (ints and doubles by numeric value, dates to the millisecond, typed values by their
///   identifying members, arrays and objects by their canonical JSON); on an array field a scalar also matches an
///   element (as in Mongo and Parse). `eq null` matches a null or missing key.
/// - `ne`, `nin`: the negation of `eq`, `in`, so they also match records without the key.
/// - `lt lte gt gte`: numbers with numbers, strings with strings (by code point: SQLite's BINARY collation
///   compares UTF-8 bytes), dates with dates (the fixed-width ISO text, chronological for years 0000–9999); any
///   other pairing never matches.
/// - `in`: membership by `eq`, including any element of an array field.
/// - `exists`: present and not null (`false`: missing or null).
/// - `prefix`: case-sensitive on strings, compared with `substr`, so `%` and `_` are literal.
/// - `regex`: the registered function `mbaas_regexp` (NSRegularExpression, options `i m s x`), strings only.
/// - `containsAll`: array fields holding every value (an empty list matches every array).
/// - `and`/`or`/`not`: SQL's, with `not` treating an unknown (NULL) operand as false so it matches.
/// - Strings holding NUL (U+0000): refused as values to compare (`invalidRequest`, ``refuseNUL(_:)``). A stored
///   string holding one is compared as the part before it: SQLite's JSON functions end it there.
struct LocalQueryCompiler {
    /// SQL text and its bound arguments, built left to right.
    struct Fragment {
        var sql = ""
        var arguments = StatementArguments()
    }

    /// Where a key's value is read from.
    enum Operand {
        /// A JSON path into `r.fields` (`$."a"."b"`).
        case json(String)
        /// The current element of `json_each` (alias `je`).
        case element
        /// A text column (`r.id`).
        case textColumn(String)
        /// A millisecond date column (`r.created_at`).
        case dateColumn(String)
    }

    private(set) var fragment = Fragment()

    // MARK: Keys

    /// The operand a query or sort key refers to. Dotted keys address nested objects.
    static func operand(forKey key: String) throws(MBaaSError) -> Operand {
        switch key {
        case "id": return .textColumn("r.id")
        case "createdAt": return .dateColumn("r.created_at")
        case "updatedAt": return .dateColumn("r.updated_at")
        default: break
        }
        let segments = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if let first = segments.first, Record.reservedFieldNames.contains(first) {
            throw MBaaSError(.invalidRequest, "query key '\(key)': '\(first)' is record metadata and cannot be queried this way (use id, createdAt or updatedAt)")
        }
        for s in segments where s.isEmpty || s.unicodeScalars.contains(where: { $0 == "\"" || $0.value < 0x20 }) {
            throw MBaaSError(.invalidRequest, "query key '\(key)' is not a valid field path (segments must be non-empty, without '\"')")
        }
        return .json("$" + segments.map { ".\"\($0)\"" }.joined())
    }

    /// A JSON path as an SQL string literal.
    static func literal(_ path: String) -> String { "'" + path.replacingOccurrences(of: "'", with: "''") + "'" }

    /// The SQL expression whose value sorts a key, as `ORDER BY` uses it. `qualified: false` drops the `r.`
    /// table alias (for index definitions).
    static func sortExpression(forKey key: String, qualified: Bool = true) throws(MBaaSError) -> String {
        let table = qualified ? "r." : ""
        switch try operand(forKey: key) {
        case .json(let p): return "json_extract(\(table)fields, \(literal(p)))"
        case .textColumn(let c), .dateColumn(let c): return table + c.dropFirst(2)
        case .element: return "je.value"
        }
    }

    // MARK: Predicates

    /// Appends the SQL of a predicate (a boolean expression; NULL only where SQL's WHERE treats it as false).
    mutating func append(_ predicate: QueryPredicate) throws(MBaaSError) {
        try Self.refuseNUL(predicate)
        switch predicate {
        case .compare(let key, let comparison, let value):
            let operand = try Self.operand(forKey: key)
            switch comparison {
            case .eq: equal(operand, value)
            case .ne: sql("NOT IFNULL("); equal(operand, value); sql(", 0)")
            case .lt: order(operand, "<", value)
            case .lte: order(operand, "<=", value)
            case .gt: order(operand, ">", value)
            case .gte: order(operand, ">=", value)
            }
        case .in(let key, let values):
            member(try Self.operand(forKey: key), values)
        case .notIn(let key, let values):
            sql("NOT IFNULL("); member(try Self.operand(forKey: key), values); sql(", 0)")
        case .exists(let key, let present):
            switch try Self.operand(forKey: key) {
            case .textColumn, .dateColumn: sql(present ? "1" : "0")
            case let o: sql("IFNULL(\(type(o)), 'null') \(present ? "!=" : "=") 'null'")
            }
        case .prefix(let key, let prefix):
            let o = try Self.operand(forKey: key)
            if case .dateColumn = o { sql("0"); return }
            sql("(\(isText(o)) AND substr(\(value(o)), 1, ?) = ?)", Int64(prefix.unicodeScalars.count), prefix)
        case .regex(let key, let pattern, let options):
            let o = try Self.operand(forKey: key)
            _ = try LocalRegex.compile(pattern, options: options)
            if case .dateColumn = o { sql("0"); return }
            sql("(\(isText(o)) AND mbaas_regexp(\(value(o)), ?, ?))", pattern, options)
        case .containsAll(let key, let values):
            let o = try Self.operand(forKey: key)
            guard case .json(let path) = o else { sql("0"); return }
            sql("(\(type(o)) = 'array'")
            for v in values {
                sql(" AND EXISTS (SELECT 1 FROM json_each(r.fields, \(Self.literal(path))) AS je WHERE ")
                match(.element, v)
                sql(")")
            }
            sql(")")
        case .and(let parts):
            guard !parts.isEmpty else { sql("1"); return }
            sql("(")
            for (i, p) in parts.enumerated() {
                if i > 0 { sql(" AND ") }
                try append(p)
            }
            sql(")")
        case .or(let parts):
            guard !parts.isEmpty else { sql("0"); return }
            sql("(")
            for (i, p) in parts.enumerated() {
                if i > 0 { sql(" OR ") }
                try append(p)
            }
            sql(")")
        case .not(let p):
            sql("NOT IFNULL(")
            try append(p)
            sql(", 0)")
        }
    }

    /// Refuses a string holding NUL (U+0000) where it would be compared in SQL: GRDB binds text as a C string and
    /// SQLite's JSON functions end a string at its first NUL (both checked on this machine's SQLite 3.40), so the
    /// comparison would be with the part before it, and the answer wrong. Arrays and objects are compared as JSON
    /// text, where a NUL is escaped, so they are allowed.
    static func refuseNUL(_ predicate: QueryPredicate) throws(MBaaSError) {
        func holdsNUL(_ s: String) -> Bool { s.utf8.contains(0) }
        func holdsNUL(_ v: Value) -> Bool {
            switch v {
            case .string(let s): holdsNUL(s)
            case .pointer(let p): holdsNUL(p.className) || holdsNUL(p.objectId)
            case .file(let f): holdsNUL(f.name)
            default: false
            }
        }
        let key: String?
        switch predicate {
        case .compare(let k, _, let v): key = holdsNUL(v) ? k : nil
        case .in(let k, let vs), .notIn(let k, let vs), .containsAll(let k, let vs): key = vs.contains(where: holdsNUL) ? k : nil
        case .prefix(let k, let p): key = holdsNUL(p) ? k : nil
        case .regex(let k, let pattern, _): key = holdsNUL(pattern) ? k : nil
        case .exists, .and, .or, .not: key = nil
        }
        if let key {
            throw MBaaSError(.invalidRequest, "query on '\(key)': a string holding NUL (U+0000) cannot be compared by the Local store (SQLite ends bound text and JSON strings at the first NUL, so it would compare only what comes before it)")
        }
    }

    // MARK: Building blocks

    mutating func sql(_ text: String, _ args: (any DatabaseValueConvertible)?...) {
        fragment.sql += text
        if !args.isEmpty { fragment.arguments += StatementArguments(args) }
    }

    private func type(_ o: Operand) -> String {
        switch o {
        case .json(let p): "json_type(r.fields, \(Self.literal(p)))"
        case .element: "je.type"
        case .textColumn: "'text'"
        case .dateColumn: "'date'"
        }
    }

    private func value(_ o: Operand) -> String {
        switch o {
        case .json(let p): "json_extract(r.fields, \(Self.literal(p)))"
        case .element: "je.value"
        case .textColumn(let c), .dateColumn(let c): c
        }
    }

    private func sub(_ o: Operand, _ name: String) -> String {
        switch o {
        case .json(let p): "json_extract(r.fields, \(Self.literal(p + "." + name)))"
        case .element: "json_extract(je.value, '$.\(name)')"
        case .textColumn, .dateColumn: "NULL"
        }
    }

    private func isText(_ o: Operand) -> String {
        if case .textColumn = o { return "1" }
        return "\(type(o)) = 'text'"
    }

    private func isTyped(_ o: Operand, _ typeName: String) -> String {
        "\(type(o)) = 'object' AND \(sub(o, "__type")) = '\(typeName)'"
    }

    /// Appends: the value at `o` equals `v` (strict type and value; no array-element rule).
    mutating func match(_ o: Operand, _ v: Value) {
        switch o {
        case .textColumn(let c):
            if case .string(let s) = v { sql("\(c) = ?", s) } else { sql("0") }
            return
        case .dateColumn(let c):
            if case .date(let d) = v { sql("\(c) = ?", LocalTime.millis(d)) } else { sql("0") }
            return
        case .json, .element:
            break
        }
        let t = type(o), x = value(o)
        switch v {
        case .null: sql("\(t) = 'null'")
        case .bool(let b): sql("\(t) = '\(b ? "true" : "false")'")
        case .int(let i): sql("(\(x) = ? AND \(t) IN ('integer','real'))", i)
        case .double(let d): sql("(\(x) = ? AND \(t) IN ('integer','real'))", d)
        case .string(let s): sql("(\(x) = ? AND \(t) = 'text')", s)
        case .date(let d): sql("(\(isTyped(o, "Date")) AND \(sub(o, "iso")) = ?)", ISO8601.format(d))
        case .bytes(let b): sql("(\(isTyped(o, "Bytes")) AND \(sub(o, "base64")) = ?)", b.base64EncodedString())
        case .pointer(let p):
            sql("(\(isTyped(o, "Pointer")) AND \(sub(o, "className")) = ? AND \(sub(o, "objectId")) = ?)",
                p.className, p.objectId)
        case .geoPoint(let g):
            sql("(\(isTyped(o, "GeoPoint")) AND \(sub(o, "latitude")) = ? AND \(sub(o, "longitude")) = ?)",
                g.latitude, g.longitude)
        case .file(let f): sql("(\(isTyped(o, "File")) AND \(sub(o, "name")) = ?)", f.name)
        case .array: sql("(\(t) = 'array' AND \(x) = json(?))", v.json.printed())
        case .object: sql("(\(t) = 'object' AND \(x) = json(?))", v.json.printed())
        }
    }

    /// Appends `eq`: null matches missing; a scalar also matches an element of an array field.
    private mutating func equal(_ o: Operand, _ v: Value) {
        guard case .json(let path) = o else { match(o, v); return }
        switch v {
        case .null:
            sql("IFNULL(\(type(o)), 'null') = 'null'")
        case .array, .object:
            match(o, v)
        default:
            sql("(")
            match(o, v)
            sql(" OR (\(type(o)) = 'array' AND EXISTS (SELECT 1 FROM json_each(r.fields, \(Self.literal(path))) AS je WHERE ")
            match(.element, v)
            sql(")))")
        }
    }

    /// Appends `in`: any value matches by `eq` (numbers and strings grouped into SQL `IN` lists).
    private mutating func member(_ o: Operand, _ values: [Value]) {
        guard !values.isEmpty else { sql("0"); return }
        switch o {
        case .textColumn(let c):
            let strings = values.compactMap(\.stringValue)
            guard !strings.isEmpty else { sql("0"); return }
            sql("\(c) IN (\(placeholders(strings.count)))")
            fragment.arguments += StatementArguments(strings)
            return
        case .dateColumn(let c):
            let dates = values.compactMap(\.dateValue).map(LocalTime.millis)
            guard !dates.isEmpty else { sql("0"); return }
            sql("\(c) IN (\(placeholders(dates.count)))")
            fragment.arguments += StatementArguments(dates)
            return
        case .json(let path):
            sql("(")
            memberOf(o, values, nullMatchesMissing: true)
            sql(" OR (\(type(o)) = 'array' AND EXISTS (SELECT 1 FROM json_each(r.fields, \(Self.literal(path))) AS je WHERE ")
            memberOf(.element, values, nullMatchesMissing: false)
            sql(")))")
        case .element:
            memberOf(o, values, nullMatchesMissing: false)
        }
    }

    private mutating func memberOf(_ o: Operand, _ values: [Value], nullMatchesMissing: Bool) {
        var numbers: [any DatabaseValueConvertible] = []
        var strings: [String] = []
        var others: [Value] = []
        for v in values {
            switch v {
            case .int(let i): numbers.append(i)
            case .double(let d): numbers.append(d)
            case .string(let s): strings.append(s)
            default: others.append(v)
            }
        }
        var first = true
        func or(_ c: inout LocalQueryCompiler) { if !first { c.sql(" OR ") }; first = false }
        sql("(")
        if !numbers.isEmpty {
            or(&self)
            sql("(\(value(o)) IN (\(placeholders(numbers.count))) AND \(type(o)) IN ('integer','real'))")
            fragment.arguments += StatementArguments(numbers)
        }
        if !strings.isEmpty {
            or(&self)
            sql("(\(value(o)) IN (\(placeholders(strings.count))) AND \(type(o)) = 'text')")
            fragment.arguments += StatementArguments(strings)
        }
        for v in others {
            or(&self)
            if case .null = v, nullMatchesMissing { sql("IFNULL(\(type(o)), 'null') = 'null'") } else { match(o, v) }
        }
        sql(")")
    }

    /// Appends an ordering comparison; pairs of different types never match.
    private mutating func order(_ o: Operand, _ op: String, _ v: Value) {
        switch (o, v) {
        case (.textColumn(let c), .string(let s)): sql("\(c) \(op) ?", s)
        case (.dateColumn(let c), .date(let d)): sql("\(c) \(op) ?", LocalTime.millis(d))
        case (.textColumn, _), (.dateColumn, _): sql("0")
        case (_, .int(let i)): sql("(\(value(o)) \(op) ? AND \(type(o)) IN ('integer','real'))", i)
        case (_, .double(let d)): sql("(\(value(o)) \(op) ? AND \(type(o)) IN ('integer','real'))", d)
        case (_, .string(let s)): sql("(\(value(o)) \(op) ? AND \(type(o)) = 'text')", s)
        case (_, .date(let d)): sql("(\(isTyped(o, "Date")) AND \(sub(o, "iso")) \(op) ?)", ISO8601.format(d))
        default: sql("0")
        }
    }

    private func placeholders(_ n: Int) -> String {
        Array(repeating: "?", count: n).joined(separator: ",")
    }
}
