import Foundation
import MBaaSCore

/// Compiles the neutral ``MBaaSCore/QueryPredicate`` into PostgreSQL over the `records` table (alias `r`), with the
/// Local store's semantics (the core's query contract):
/// - `eq`: same type and value (numbers by numeric value, ints and doubles alike; typed values by their identifying
///   members); a scalar also matches an element of an array field; `eq null` matches null or a missing key.
/// - `ne`, `nin`: negations of `eq`, `in`, so they match records without the key.
/// - `lt lte gt gte`: numbers with numbers, strings with strings by code point (`COLLATE "C"`), dates with dates;
///   other pairs never match.
/// - `in`: any value by `eq`, including any element of an array field.
/// - `exists`: present and not null. `prefix`: case-sensitive `starts_with`, no wildcards.
/// - `regex`: PostgreSQL's advanced regular expressions (`~`), options `i m s x` mapped to its embedded options so that
///   `.` and `^`/`$` treat newlines as NSRegularExpression does; strings only.
/// - `containsAll`: an array holding every value.
///
/// Every value and every field path is a bound parameter (`$n`); a path is a `text[]` for `#>`. Casts that could fail
/// on another type (`::numeric`, `jsonb_array_elements`) sit inside `CASE WHEN jsonb_typeof(…) = …`, so a record
/// whose field has another type never makes a statement fail.
struct PostgresQueryCompiler {
    var q: PGSQL
    private var paths: [String: String] = [:]

    init(_ q: PGSQL) { self.q = q }

    enum Operand {
        /// A field path (the placeholder of its bound `text[]`).
        case json(String)
        /// The current element of `jsonb_array_elements` (alias `je`).
        case element
        case textColumn(String)
        case dateColumn(String)
    }

    // MARK: Keys

    mutating func operand(forKey key: String) throws(MBaaSError) -> Operand {
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
        if let p = paths[key] { return .json(p) }
        let p = q.bind(segments)
        paths[key] = p
        return .json(p)
    }

    private func x(_ o: Operand) -> String {
        switch o {
        case .json(let p): "(r.fields #> \(p)::text[])"
        case .element: "je.value"
        case .textColumn(let c), .dateColumn(let c): c
        }
    }

    private func typ(_ o: Operand) -> String {
        switch o {
        case .json, .element: "jsonb_typeof(\(x(o)))"
        case .textColumn: "'string'"
        case .dateColumn: "'date'"
        }
    }

    private func sub(_ o: Operand, _ name: String) -> String { "(\(x(o)) ->> '\(name)')" }

    private func typed(_ o: Operand, _ name: String, _ condition: String) -> String {
        "(CASE WHEN \(typ(o)) = 'object' THEN \(sub(o, "__type")) = '\(name)' AND \(condition) ELSE FALSE END)"
    }

    // MARK: Predicates

    mutating func predicate(_ p: QueryPredicate) throws(MBaaSError) -> String {
        switch p {
        case .compare(let key, let comparison, let value):
            let o = try operand(forKey: key)
            switch comparison {
            case .eq: return equal(o, value)
            case .ne: return "(NOT COALESCE(\(equal(o, value)), FALSE))"
            case .lt: return order(o, "<", value)
            case .lte: return order(o, "<=", value)
            case .gt: return order(o, ">", value)
            case .gte: return order(o, ">=", value)
            }
        case .in(let key, let values):
            let o = try operand(forKey: key)
            return member(o, values)
        case .notIn(let key, let values):
            let o = try operand(forKey: key)
            let inner = member(o, values)
            return "(NOT COALESCE(\(inner), FALSE))"
        case .exists(let key, let present):
            let o = try operand(forKey: key)
            switch o {
            case .textColumn, .dateColumn: return present ? "TRUE" : "FALSE"
            default: return "(COALESCE(\(typ(o)), 'null') \(present ? "<>" : "=") 'null')"
            }
        case .prefix(let key, let prefix):
            let o = try operand(forKey: key)
            switch o {
            case .dateColumn: return "FALSE"
            case .textColumn(let c): return "starts_with(\(c), \(q.bind(prefix)))"
            default: return "(CASE WHEN \(typ(o)) = 'string' THEN starts_with(\(x(o)) #>> '{}', \(q.bind(prefix))) ELSE FALSE END)"
            }
        case .regex(let key, let pattern, let options):
            let o = try operand(forKey: key)
            let are = try Self.regex(pattern, options: options)
            switch o {
            case .dateColumn: return "FALSE"
            case .textColumn(let c): return "(\(c) ~ \(q.bind(are)))"
            default: return "(CASE WHEN \(typ(o)) = 'string' THEN (\(x(o)) #>> '{}') ~ \(q.bind(are)) ELSE FALSE END)"
            }
        case .containsAll(let key, let values):
            let o = try operand(forKey: key)
            guard case .json = o else { return "FALSE" }
            var parts = ["TRUE"]
            for v in values {
                let part = elementExists(o, v)
                parts.append(part)
            }
            return "(CASE WHEN \(typ(o)) = 'array' THEN \(parts.joined(separator: " AND ")) ELSE FALSE END)"
        case .and(let parts):
            guard !parts.isEmpty else { return "TRUE" }
            var out: [String] = []
            for part in parts { out.append(try predicate(part)) }
            return "(" + out.joined(separator: " AND ") + ")"
        case .or(let parts):
            guard !parts.isEmpty else { return "FALSE" }
            var out: [String] = []
            for part in parts { out.append(try predicate(part)) }
            return "(" + out.joined(separator: " OR ") + ")"
        case .not(let inner):
            return "(NOT COALESCE(\(try predicate(inner)), FALSE))"
        }
    }

    /// The pattern with PostgreSQL's embedded options in front: NSRegularExpression's defaults (`.` stops at newlines,
    /// `^`/`$` only at the ends) are ARE's `p`; `s` lifts the first, `m` the second (`n` with both rules, `w` with `ms`).
    static func regex(_ pattern: String, options: String) throws(MBaaSError) -> String {
        guard options.allSatisfy({ "imsx".contains($0) }) else {
            throw MBaaSError(.invalidRequest, "regex options '\(options)': only i, m, s and x are supported")
        }
        var flags = ""
        switch (options.contains("m"), options.contains("s")) {
        case (false, false): flags = "p"
        case (false, true): flags = "s"
        case (true, false): flags = "n"
        case (true, true): flags = "w"
        }
        if options.contains("i") { flags += "i" }
        if options.contains("x") { flags += "x" }
        return "(?\(flags))" + pattern
    }

    // MARK: Building blocks

    /// The value at `o` equals `v` (type and value; no array-element rule). Never NULL.
    mutating func match(_ o: Operand, _ v: Value) -> String {
        switch o {
        case .textColumn(let c):
            if case .string(let s) = v { return "(\(c) = \(q.bind(s)))" }
            return "FALSE"
        case .dateColumn(let c):
            if case .date(let d) = v { return "(\(c) = \(q.bind(ISO8601.millis(d))))" }
            return "FALSE"
        case .json, .element:
            break
        }
        let t = typ(o), e = x(o)
        switch v {
        case .null: return "COALESCE(\(t) = 'null', FALSE)"
        case .bool(let b): return "COALESCE(\(e) = '\(b ? "true" : "false")'::jsonb, FALSE)"
        case .int(let i): return "(CASE WHEN \(t) = 'number' THEN (\(e))::numeric = \(q.bind(String(i)))::numeric ELSE FALSE END)"
        case .double(let d): return "(CASE WHEN \(t) = 'number' THEN (\(e))::numeric = \(q.bind(Self.number(d)))::numeric ELSE FALSE END)"
        case .string(let s): return "(CASE WHEN \(t) = 'string' THEN (\(e) #>> '{}') = \(q.bind(s)) ELSE FALSE END)"
        case .date(let d):
            let p = q.bind(ISO8601.format(d))
            return typed(o, "Date", "\(sub(o, "iso")) = \(p)")
        case .bytes(let b):
            let p = q.bind(b.base64EncodedString())
            return typed(o, "Bytes", "\(sub(o, "base64")) = \(p)")
        case .pointer(let ptr):
            let c = q.bind(ptr.className), i = q.bind(ptr.objectId)
            return typed(o, "Pointer", "\(sub(o, "className")) = \(c) AND \(sub(o, "objectId")) = \(i)")
        case .geoPoint(let g):
            let lat = q.bind(Self.number(g.latitude)), lon = q.bind(Self.number(g.longitude))
            return typed(o, "GeoPoint", "(\(e) -> 'latitude') = \(lat)::jsonb AND (\(e) -> 'longitude') = \(lon)::jsonb")
        case .file(let f):
            let p = q.bind(f.name)
            return typed(o, "File", "\(sub(o, "name")) = \(p)")
        case .array: return "COALESCE(\(t) = 'array' AND \(e) = \(q.bind(v.json.printed()))::jsonb, FALSE)"
        case .object: return "COALESCE(\(t) = 'object' AND \(e) = \(q.bind(v.json.printed()))::jsonb, FALSE)"
        }
    }

    /// A double as PostgreSQL's numeric reads it (finite: stored values are checked).
    static func number(_ d: Double) -> String {
        if d.rounded() == d, abs(d) < 1e15 { return String(Int64(d)) }
        return "\(d)"
    }

    /// An element of the array at `o` matches `v`.
    private mutating func elementExists(_ o: Operand, _ v: Value) -> String {
        let inner = match(.element, v)
        return "EXISTS (SELECT 1 FROM jsonb_array_elements(\(x(o))) AS je(value) WHERE \(inner))"
    }

    /// `eq`: null matches missing; a scalar also matches an element of an array field.
    private mutating func equal(_ o: Operand, _ v: Value) -> String {
        guard case .json = o else { return match(o, v) }
        switch v {
        case .null: return "(COALESCE(\(typ(o)), 'null') = 'null')"
        case .array, .object: return match(o, v)
        default:
            let direct = match(o, v)
            let element = elementExists(o, v)
            return "(\(direct) OR (CASE WHEN \(typ(o)) = 'array' THEN \(element) ELSE FALSE END))"
        }
    }

    /// `in`: any value by `eq`.
    private mutating func member(_ o: Operand, _ values: [Value]) -> String {
        guard !values.isEmpty else { return "FALSE" }
        var parts: [String] = []
        for v in values {
            let part = equal(o, v)
            parts.append(part)
        }
        return "(" + parts.joined(separator: " OR ") + ")"
    }

    /// An ordering comparison; pairs of different types never match.
    private mutating func order(_ o: Operand, _ op: String, _ v: Value) -> String {
        switch (o, v) {
        case (.textColumn(let c), .string(let s)): return "(\(c) COLLATE \"C\" \(op) \(q.bind(s)))"
        case (.dateColumn(let c), .date(let d)): return "(\(c) \(op) \(q.bind(ISO8601.millis(d))))"
        case (.textColumn, _), (.dateColumn, _): return "FALSE"
        case (_, .int(let i)):
            return "(CASE WHEN \(typ(o)) = 'number' THEN (\(x(o)))::numeric \(op) \(q.bind(String(i)))::numeric ELSE FALSE END)"
        case (_, .double(let d)):
            return "(CASE WHEN \(typ(o)) = 'number' THEN (\(x(o)))::numeric \(op) \(q.bind(Self.number(d)))::numeric ELSE FALSE END)"
        case (_, .string(let s)):
            return "(CASE WHEN \(typ(o)) = 'string' THEN (\(x(o)) #>> '{}') COLLATE \"C\" \(op) \(q.bind(s)) ELSE FALSE END)"
        case (_, .date(let d)):
            let p = q.bind(ISO8601.format(d))
            return typed(o, "Date", "\(sub(o, "iso")) COLLATE \"C\" \(op) \(p)")
        default: return "FALSE"
        }
    }

    // MARK: Sorting

    /// One `ORDER BY` term: its SQL, the type its cursor value is cast back to, and its direction.
    struct SortTerm {
        var sql: String
        var cast: String
        var ascending: Bool
    }

    /// The terms a sort key expands to. Metadata keys sort by their column; a field sorts missing and null values
    /// first (ascending), then numbers and booleans by value, then strings by code point, then objects and arrays by
    /// their JSON (dates, `{"iso":…}`, chronologically), as the Local store orders them.
    mutating func sortTerms(_ key: SortKey) throws(MBaaSError) -> [SortTerm] {
        let o = try operand(forKey: key.key)
        switch o {
        case .textColumn(let c): return [SortTerm(sql: "(\(c) COLLATE \"C\")", cast: "text", ascending: key.ascending)]
        case .dateColumn(let c): return [SortTerm(sql: c, cast: "bigint", ascending: key.ascending)]
        default: break
        }
        let t = typ(o), e = x(o)
        return [
            SortTerm(sql: "(CASE \(t) WHEN 'number' THEN 1 WHEN 'boolean' THEN 1 WHEN 'string' THEN 2 WHEN 'object' THEN 3 WHEN 'array' THEN 3 END)",
                     cast: "integer", ascending: key.ascending),
            SortTerm(sql: "(CASE WHEN \(t) = 'number' THEN (\(e))::numeric WHEN \(t) = 'boolean' THEN (CASE WHEN \(e) = 'true'::jsonb THEN 1 ELSE 0 END) END)",
                     cast: "numeric", ascending: key.ascending),
            SortTerm(sql: "((CASE WHEN \(t) = 'string' THEN \(e) #>> '{}' WHEN \(t) IN ('object', 'array') THEN (\(e))::text END) COLLATE \"C\")",
                     cast: "text", ascending: key.ascending),
        ]
    }
}
