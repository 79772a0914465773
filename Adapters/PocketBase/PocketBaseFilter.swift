import Foundation
public import MBaaSCore

/// A PocketBase filter expression (the `filter` query parameter), as a value: built by
/// ``PocketBaseQueryTranslator``, printed with ``text``, and read back with ``parse(_:)`` (an emulator's side).
///
/// Literals are printed for PocketBase 0.40's filter lexer: text in single quotes with `\` doubled and `'`
/// escaped as `\'` (the lexer turns `\\`, `\'` and `\"` back into the character and keeps any other backslash),
/// numbers in plain decimal (the lexer has no exponents), `true`, `false`, `null`. User input is only ever printed
/// as a literal, never pasted into the expression. PocketBase limits a filter to 3500 characters and 200
/// comparisons (``maxLength``, ``maxExpressions``).
public indirect enum PocketBaseFilter: Sendable, Hashable {
    /// Always true or false (simplified away inside `and`/`or`; at the top it means "no filter" or "no match").
    case constant(Bool)
    case compare(String, Operator, Literal)
    case and([PocketBaseFilter])
    case or([PocketBaseFilter])

    public static let maxLength = 3500
    public static let maxExpressions = 200

    public enum Operator: String, Sendable, Hashable, CaseIterable {
        case eq = "=", ne = "!=", lt = "<", lte = "<=", gt = ">", gte = ">="

        public var negated: Operator {
            switch self {
            case .eq: .ne
            case .ne: .eq
            case .lt: .gte
            case .lte: .gt
            case .gt: .lte
            case .gte: .lt
            }
        }
    }

    public enum Literal: Sendable, Hashable {
        case text(String)
        case int(Int64)
        case double(Double)
        case bool(Bool)
        case null

        /// The literal as the PocketBase lexer reads it.
        public var text: String {
            switch self {
            case .text(let s): "'" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
            case .int(let i): String(i)
            case .double(let d): PocketBaseFilter.plainDecimal(d)
            case .bool(let b): b ? "true" : "false"
            case .null: "null"
            }
        }
    }

    // MARK: Building

    /// `and`, flattened and simplified (`false` absorbs, `true` vanishes).
    public static func all(_ parts: [PocketBaseFilter]) -> PocketBaseFilter {
        var out: [PocketBaseFilter] = []
        for p in parts {
            switch p {
            case .constant(true): continue
            case .constant(false): return .constant(false)
            case .and(let inner): out.append(contentsOf: inner)
            default: if !out.contains(p) { out.append(p) }
            }
        }
        return out.isEmpty ? .constant(true) : out.count == 1 ? out[0] : .and(out)
    }

    /// `or`, flattened and simplified (`true` absorbs, `false` vanishes).
    public static func any(_ parts: [PocketBaseFilter]) -> PocketBaseFilter {
        var out: [PocketBaseFilter] = []
        for p in parts {
            switch p {
            case .constant(false): continue
            case .constant(true): return .constant(true)
            case .or(let inner): out.append(contentsOf: inner)
            default: if !out.contains(p) { out.append(p) }
            }
        }
        return out.isEmpty ? .constant(false) : out.count == 1 ? out[0] : .or(out)
    }

    /// The negation, pushed down to the comparisons (PocketBase filters have no `not`). Exact because every
    /// comparison the translator builds is two-valued: columns are `NOT NULL`, JSON paths are compared with
    /// `IS`/`IS NOT`, and orderings on JSON paths carry a `!= null` guard.
    public var negated: PocketBaseFilter {
        switch self {
        case .constant(let b): .constant(!b)
        case .compare(let l, let op, let r): .compare(l, op.negated, r)
        case .and(let ps): .any(ps.map(\.negated))
        case .or(let ps): .all(ps.map(\.negated))
        }
    }

    // MARK: Printing

    /// The filter text. Compound children are parenthesized (PocketBase joins left to right without precedence).
    public var text: String {
        switch self {
        case .constant(true): return "id != ''"
        case .constant(false): return "id = ''"
        case .compare(let l, let op, let r): return "\(l) \(op.rawValue) \(r.text)"
        case .and(let ps): return ps.map(\.childText).joined(separator: " && ")
        case .or(let ps): return ps.map(\.childText).joined(separator: " || ")
        }
    }

    private var childText: String {
        switch self {
        case .and, .or: "(" + text + ")"
        default: text
        }
    }

    /// The number of comparisons, as PocketBase counts them against ``maxExpressions``.
    public var expressionCount: Int {
        switch self {
        case .constant, .compare: 1
        case .and(let ps), .or(let ps): ps.reduce(0) { $0 + $1.expressionCount }
        }
    }

    /// A double in plain decimal notation (the filter lexer reads no exponent).
    public static func plainDecimal(_ d: Double) -> String {
        let s = "\(d)"
        guard let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }), let exponent = Int(s[s.index(after: e)...]) else {
            return s
        }
        var mantissa = String(s[..<e])
        let negative = mantissa.hasPrefix("-")
        if negative { mantissa.removeFirst() }
        let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
        let intPart = String(parts[0])
        let frac = parts.count > 1 ? String(parts[1]) : ""
        var digits = intPart + frac
        var point = intPart.count + exponent
        while digits.count > 1, digits.hasPrefix("0"), point > 1 { digits.removeFirst(); point -= 1 }
        var out: String
        if point <= 0 {
            out = "0." + String(repeating: "0", count: -point) + digits
        } else if point >= digits.count {
            out = digits + String(repeating: "0", count: point - digits.count) + ".0"
        } else {
            out = String(digits.prefix(point)) + "." + String(digits.dropFirst(point))
        }
        if out.contains("."), !out.hasSuffix(".0") {
            while out.hasSuffix("0") { out.removeLast() }
            if out.hasSuffix(".") { out += "0" }
        }
        return (negative ? "-" : "") + out
    }

    // MARK: Parsing (the server's direction)

    /// Reads a filter in the subset this type prints: `identifier op literal` comparisons joined by `&&` and
    /// `||` (left to right, as PocketBase joins them) with parentheses. Anything else is `invalidRequest`.
    public static func parse(_ text: String) throws(MBaaSError) -> PocketBaseFilter {
        var parser = FilterParser(Array(text.unicodeScalars))
        let f = try parser.expression()
        parser.skipSpace()
        guard parser.atEnd else { throw parser.error("unexpected text") }
        return f
    }
}

private struct FilterParser {
    let s: [Unicode.Scalar]
    var i = 0
    init(_ s: [Unicode.Scalar]) { self.s = s }

    var atEnd: Bool { i >= s.count }

    func error(_ message: String) -> MBaaSError {
        MBaaSError(.invalidRequest, "filter: \(message) at offset \(i)")
    }

    mutating func skipSpace() { while i < s.count, [" ", "\t", "\n"].contains(s[i]) { i += 1 } }

    mutating func take(_ token: String) -> Bool {
        skipSpace()
        let t = Array(token.unicodeScalars)
        guard i + t.count <= s.count, Array(s[i..<i + t.count]) == t else { return false }
        i += t.count
        return true
    }

    mutating func expression() throws(MBaaSError) -> PocketBaseFilter {
        var result = try term()
        while true {
            if take("&&") { result = .all([result, try term()]) }
            else if take("||") { result = .any([result, try term()]) }
            else { return result }
        }
    }

    mutating func term() throws(MBaaSError) -> PocketBaseFilter {
        if take("(") {
            let inner = try expression()
            guard take(")") else { throw error("expected ')'") }
            // Keep the grouping: a parenthesized `or` inside an `and` must not flatten into it.
            return inner
        }
        let ident = try identifier()
        skipSpace()
        var op: PocketBaseFilter.Operator?
        for candidate in [PocketBaseFilter.Operator.ne, .lte, .gte, .eq, .lt, .gt] where take(candidate.rawValue) {
            op = candidate
            break
        }
        guard let op else { throw error("expected a comparison operator after '\(ident)'") }
        let lit = try literal()
        if ident == "id", op == .ne, lit == .text("") { return .constant(true) }
        if ident == "id", op == .eq, lit == .text("") { return .constant(false) }
        return .compare(ident, op, lit)
    }

    mutating func identifier() throws(MBaaSError) -> String {
        skipSpace()
        let start = i
        while i < s.count, PocketBaseWire.isWordScalar(s[i]) || [".", ":", "@", "#"].contains(s[i]) { i += 1 }
        guard i > start else { throw error("expected a field name") }
        return String(String.UnicodeScalarView(s[start..<i]))
    }

    mutating func literal() throws(MBaaSError) -> PocketBaseFilter.Literal {
        skipSpace()
        guard i < s.count else { throw error("expected a value") }
        let c = s[i]
        if c == "'" || c == "\"" {
            i += 1
            var out = String.UnicodeScalarView()
            while i < s.count {
                let ch = s[i]
                if ch == "\\", i + 1 < s.count, ["\\", "'", "\""].contains(s[i + 1]) {
                    out.append(s[i + 1])
                    i += 2
                    continue
                }
                if ch == c { i += 1; return .text(String(out)) }
                out.append(ch)
                i += 1
            }
            throw error("unterminated text")
        }
        if c == "-" || (c >= "0" && c <= "9") {
            let start = i
            i += 1
            while i < s.count, (s[i] >= "0" && s[i] <= "9") || s[i] == "." { i += 1 }
            let text = String(String.UnicodeScalarView(s[start..<i]))
            if !text.contains("."), let n = Int64(text) { return .int(n) }
            guard let d = Double(text) else { throw error("invalid number '\(text)'") }
            return .double(d)
        }
        let word = try identifier()
        switch word {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default: throw error("expected a value, got '\(word)'")
        }
    }
}

/// Translates neutral queries to PocketBase `filter`, `sort` and `fields` parameters.
///
/// Semantics follow ``QueryPredicate`` exactly, using the type columns (see ``PocketBaseRecordCodec``):
/// - a comparison matches only values of the operand's type (`T = 'int' || T = 'double'` for numbers), so absent
///   fields (stored as zero values) never match `eq`/`lt`..., and `ne`/`nin` match them;
/// - `exists` tests the type column (not `""`, not `null`);
/// - `prefix` is a binary range (`k >= 'ab' && k < 'ac'`): case-sensitive and exact, unlike `~` (SQL `LIKE`);
/// - `not` is pushed down with De Morgan's laws;
/// - a field the collection does not have is absent from every record, so the condition becomes a constant.
///
/// Not expressible, thrown as `unsupported`: `regex` (PocketBase has no regular expressions), `containsAll` and
/// `in` on JSON fields (PocketBase cannot look inside JSON arrays: `:each` works only on select, relation and
/// file fields), and equality with whole arrays or objects.
public struct PocketBaseQueryTranslator: Sendable {
    /// What is known of the collection; `nil`: nothing (every field assumed written by MBaaSKit).
    public var schema: PocketBaseSchema?

    public init(schema: PocketBaseSchema?) { self.schema = schema }

    private enum Access {
        case system(String, isDate: Bool)
        case tagged(column: String, tag: String, kind: PocketBaseFieldKind?)
        case untagged(column: String, kind: PocketBaseFieldKind?)
        case nested(String)
        case missing
    }

    private func access(_ key: String) throws(MBaaSError) -> Access {
        switch key {
        case "id": return .system("id", isDate: false)
        case "createdAt": return .system("created", isDate: true)
        case "updatedAt": return .system("updated", isDate: true)
        default: break
        }
        let segments = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if segments[0] == "acl" {
            throw MBaaSError.unsupported("querying the ACL", by: "pocketbase", reason: "the ACL is enforced by access rules, not queried")
        }
        try PocketBaseWire.validateFieldName(segments[0], authCollection: schema?.isAuth ?? false)
        for segment in segments.dropFirst() where segment.isEmpty || !segment.unicodeScalars.allSatisfy(PocketBaseWire.isWordScalar) {
            throw MBaaSError(.invalidRequest, "key '\(key)': PocketBase JSON paths take segments of ASCII letters, digits and _")
        }
        let top = segments[0]
        guard let schema else {
            return segments.count > 1 ? .nested(key) : .tagged(column: top, tag: PocketBaseWire.tagColumn(for: top), kind: nil)
        }
        guard let column = schema.column(top) else { return .missing }
        let kind = schema.kind(of: top)
        if segments.count > 1 {
            guard kind == nil || kind == .json else { return .missing }
            return .nested(([column] + segments.dropFirst()).joined(separator: "."))
        }
        if let tag = schema.column(PocketBaseWire.tagColumn(for: top)) {
            return .tagged(column: column, tag: tag, kind: kind)
        }
        return .untagged(column: column, kind: kind)
    }

    // MARK: Filter

    /// The filter for a predicate (`.constant(true)` when there is none). Throws `unsupported` for what
    /// PocketBase cannot express and `invalidRequest` for a filter over PocketBase's size limits.
    public func filter(_ predicate: QueryPredicate?) throws(MBaaSError) -> PocketBaseFilter {
        guard let predicate else { return .constant(true) }
        let f = try translate(predicate)
        if case .constant = f { return f }
        let count = f.expressionCount, length = f.text.count
        if count > PocketBaseFilter.maxExpressions || length > PocketBaseFilter.maxLength {
            throw MBaaSError(.invalidRequest, "query too large for PocketBase: \(count) comparisons and \(length) characters (limits \(PocketBaseFilter.maxExpressions) and \(PocketBaseFilter.maxLength))")
        }
        return f
    }

    private func translate(_ p: QueryPredicate) throws(MBaaSError) -> PocketBaseFilter {
        switch p {
        case .and(let ps):
            var parts: [PocketBaseFilter] = []
            for q in ps { parts.append(try translate(q)) }
            return .all(parts)
        case .or(let ps):
            var parts: [PocketBaseFilter] = []
            for q in ps { parts.append(try translate(q)) }
            return .any(parts)
        case .not(let q): return try translate(q).negated
        case .compare(let key, .eq, let v): return try equal(key, v)
        case .compare(let key, .ne, let v): return try equal(key, v).negated
        case .compare(let key, let c, let v): return try order(key, c, v)
        case .in(let key, let vs): return try membership(key, vs)
        case .notIn(let key, let vs): return try membership(key, vs).negated
        case .exists(let key, let present):
            let f = try exists(key)
            return present ? f : f.negated
        case .prefix(let key, let prefix): return try hasPrefix(key, prefix)
        case .regex:
            throw MBaaSError.unsupported("the query operator 'regex'", by: "pocketbase", reason: PocketBaseBackend.regexNote)
        case .containsAll:
            throw MBaaSError.unsupported("the query operator 'containsAll'", by: "pocketbase", reason: PocketBaseBackend.containsAllNote)
        }
    }

    /// The tag guard: the field holds a value of the operand's type.
    private func guardType(_ tag: String, _ v: Value) -> PocketBaseFilter {
        switch v {
        case .int, .double: .any([.compare(tag, .eq, .text("int")), .compare(tag, .eq, .text("double"))])
        default: .compare(tag, .eq, .text(v.typeName))
        }
    }

    private func compatible(_ v: Value, _ kind: PocketBaseFieldKind?) -> Bool {
        guard let kind, kind != .json else { return true }
        switch v {
        case .string: return kind.isTextual
        case .int, .double: return kind == .number
        case .bool: return kind == .bool
        case .date: return kind == .date || kind == .autodate
        case .geoPoint: return kind == .geoPoint
        case .file: return kind == .file
        case .pointer: return kind == .relation
        default: return false
        }
    }

    private func literal(_ v: Value, inJSON: Bool) throws(MBaaSError) -> PocketBaseFilter.Literal {
        switch v {
        case .string(let s): return .text(s)
        case .int(let i):
            try PocketBaseRecordCodec.checkRepresentable(v, path: "query value")
            return .int(i)
        case .double(let d):
            try PocketBaseRecordCodec.checkRepresentable(v, path: "query value")
            return .double(d)
        case .bool(let b): return .bool(b)
        case .date(let d): return .text(inJSON ? ISO8601.format(d) : PocketBaseWire.formatDate(d))
        case .null: return .null
        default: throw MBaaSError(.invalidRequest, "a \(v.typeName) is not a comparable value")
        }
    }

    /// Equality of a column (or JSON path) with a non-null value, without a type guard.
    private func valueEquals(_ ident: String, _ v: Value, kind: PocketBaseFieldKind?) throws(MBaaSError) -> PocketBaseFilter {
        let inJSON = kind == .json
        switch v {
        case .string, .int, .double, .bool:
            return .compare(ident, .eq, try literal(v, inJSON: inJSON))
        case .date(let d):
            return inJSON ? .compare(ident + ".iso", .eq, .text(ISO8601.format(d))) : .compare(ident, .eq, .text(PocketBaseWire.formatDate(d)))
        case .geoPoint(let g):
            let (lat, lon) = inJSON ? ("latitude", "longitude") : ("lat", "lon")
            return .all([.compare("\(ident).\(lat)", .eq, .double(g.latitude)), .compare("\(ident).\(lon)", .eq, .double(g.longitude))])
        case .pointer(let p):
            if kind == .relation { return .compare(ident, .eq, .text(p.objectId)) }
            return .all([.compare(ident + ".className", .eq, .text(p.className)), .compare(ident + ".objectId", .eq, .text(p.objectId))])
        case .bytes(let b):
            return .compare(ident + ".base64", .eq, .text(b.base64EncodedString()))
        case .file(let f):
            return kind == .file ? .compare(ident, .eq, .text(f.name)) : .compare(ident + ".name", .eq, .text(f.name))
        case .array, .object:
            throw MBaaSError.unsupported("comparing a field with a whole \(v.typeName)", by: "pocketbase",
                                         reason: "PocketBase compares JSON fields only by path")
        case .null:
            return .compare(ident, .eq, .null)
        }
    }

    private func equal(_ key: String, _ v: Value) throws(MBaaSError) -> PocketBaseFilter {
        switch try access(key) {
        case .missing:
            return .constant(v.isNull)
        case .system(let ident, let isDate):
            switch (v, isDate) {
            case (.string(let s), false): return .compare(ident, .eq, .text(s))
            case (.date(let d), true): return .compare(ident, .eq, .text(PocketBaseWire.formatDate(d)))
            default: return .constant(false)
            }
        case .tagged(let column, let tag, let kind):
            if v.isNull { return .any([.compare(tag, .eq, .text("")), .compare(tag, .eq, .text("null"))]) }
            guard compatible(v, kind) else { return .constant(false) }
            return .all([guardType(tag, v), try valueEquals(column, v, kind: kind ?? naturalKind(v))])
        case .untagged(let column, let kind):
            guard v.isNull || compatible(v, kind) else { return .constant(false) }
            return try valueEquals(column, v, kind: kind ?? naturalKind(v))
        case .nested(let path):
            return try valueEquals(path, v, kind: .json)
        }
    }

    private func naturalKind(_ v: Value) -> PocketBaseFieldKind {
        switch v {
        case .string: .text
        case .int, .double: .number
        case .bool: .bool
        case .date: .date
        case .geoPoint: .geoPoint
        default: .json
        }
    }

    private func order(_ key: String, _ c: QueryPredicate.Comparison, _ v: Value) throws(MBaaSError) -> PocketBaseFilter {
        let op = PocketBaseFilter.Operator(rawValue: ["lt": "<", "lte": "<=", "gt": ">", "gte": ">="][c.rawValue]!)!
        switch v {
        case .string, .int, .double, .date: break
        default: return .constant(false)  // only numbers, strings and dates are ordered
        }
        switch try access(key) {
        case .missing:
            return .constant(false)
        case .system(let ident, let isDate):
            switch (v, isDate) {
            case (.string, false), (.date, true): return .compare(ident, op, try literal(v, inJSON: false))
            default: return .constant(false)
            }
        case .tagged(let column, let tag, let kind):
            guard compatible(v, kind) else { return .constant(false) }
            let inJSON = kind == .json
            let ident = inJSON && v.dateValue != nil ? column + ".iso" : column
            return .all([guardType(tag, v), .compare(ident, op, try literal(v, inJSON: inJSON))])
        case .untagged(let column, let kind):
            guard compatible(v, kind ?? naturalKind(v)) else { return .constant(false) }
            if kind == .date, v.dateValue != nil {
                return .all([.compare(column, .ne, .text("")), .compare(column, op, try literal(v, inJSON: false))])
            }
            return .compare(column, op, try literal(v, inJSON: kind == .json))
        case .nested(let path):
            let ident = v.dateValue != nil ? path + ".iso" : path
            return .all([.compare(ident, .ne, .null), .compare(ident, op, try literal(v, inJSON: true))])
        }
    }

    private func membership(_ key: String, _ values: [Value]) throws(MBaaSError) -> PocketBaseFilter {
        if case .tagged(_, _, .json?) = try access(key), values.contains(where: { [.string, .int, .double, .bool].contains(typeClass($0)) }) {
            throw MBaaSError.unsupported("'in' on the JSON field '\(key)'", by: "pocketbase", reason: PocketBaseBackend.inJSONNote)
        }
        var parts: [PocketBaseFilter] = []
        for v in values { parts.append(try equal(key, v)) }
        return .any(parts)
    }

    private enum TypeClass { case string, int, double, bool, other }
    private func typeClass(_ v: Value) -> TypeClass {
        switch v {
        case .string: .string
        case .int: .int
        case .double: .double
        case .bool: .bool
        default: .other
        }
    }

    private func exists(_ key: String) throws(MBaaSError) -> PocketBaseFilter {
        switch try access(key) {
        case .missing: return .constant(false)
        case .system: return .constant(true)
        case .tagged(_, let tag, _): return .all([.compare(tag, .ne, .text("")), .compare(tag, .ne, .text("null"))])
        case .untagged(let column, let kind):
            switch kind {
            case .json?: return .compare(column, .ne, .null)
            case .date?, .file?, .relation?: return .compare(column, .ne, .text(""))
            default: return .constant(true)
            }
        case .nested(let path): return .compare(path, .ne, .null)
        }
    }

    private func hasPrefix(_ key: String, _ prefix: String) throws(MBaaSError) -> PocketBaseFilter {
        let range: (String) -> PocketBaseFilter = { ident in
            guard !prefix.isEmpty else { return .constant(true) }
            var parts: [PocketBaseFilter] = [.compare(ident, .gte, .text(prefix))]
            if let upper = PocketBaseQueryTranslator.successor(of: prefix) { parts.append(.compare(ident, .lt, .text(upper))) }
            return .all(parts)
        }
        switch try access(key) {
        case .missing: return .constant(false)
        case .system(let ident, let isDate): return isDate ? .constant(false) : range(ident)
        case .tagged(let column, let tag, let kind):
            guard kind == nil || kind!.isTextual || kind == .json else { return .constant(false) }
            return .all([.compare(tag, .eq, .text("string")), range(column)])
        case .untagged(let column, let kind):
            guard kind == nil || kind!.isTextual else { return .constant(false) }
            return range(column)
        case .nested(let path):
            return prefix.isEmpty ? .compare(path, .ne, .null) : .all([.compare(path, .ne, .null), range(path)])
        }
    }

    /// The smallest string greater than every string starting with `prefix`, in code point order (SQLite's
    /// binary collation of UTF-8); `nil` when there is none.
    public static func successor(of prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.popLast() {
            var next = last.value + 1
            if next == 0xD800 { next = 0xE000 }
            if next <= 0x10FFFF, let s = Unicode.Scalar(next) {
                scalars.append(s)
                return String(String.UnicodeScalarView(scalars))
            }
        }
        return nil
    }

    // MARK: Sort and fields

    /// The `sort` parameter: each key (`-` for descending), `id`/`createdAt`/`updatedAt` mapped to PocketBase's
    /// names, keys the collection does not have dropped (they are absent everywhere), and `@rowid` appended so
    /// equal keys keep insertion order across pages. PocketBase allows at most 8 sort keys.
    public func sort(_ keys: [SortKey]) throws(MBaaSError) -> String {
        var parts: [String] = []
        for key in keys {
            let ident: String
            switch try access(key.key) {
            case .missing: continue
            case .system(let s, _): ident = s
            case .tagged(let c, _, _), .untagged(let c, _): ident = c
            case .nested(let p): ident = p
            }
            parts.append((key.ascending ? "" : "-") + ident)
        }
        if !parts.contains("id"), !parts.contains("-id") { parts.append("@rowid") }
        guard parts.count <= 8 else {
            throw MBaaSError(.invalidRequest, "PocketBase sorts by at most 8 keys (\(parts.count) with the tie-breaker)")
        }
        return parts.joined(separator: ",")
    }

    /// The `fields` parameter for selected keys (with their type columns and the metadata), or `nil` for all.
    public func fields(_ keys: [String]?) throws(MBaaSError) -> String? {
        guard let keys else { return nil }
        var out = ["id", "collectionId", "collectionName", "created", "updated"] + PocketBaseCollection.ACLColumn.all
        for key in keys {
            let top = String(key.split(separator: ".").first ?? Substring(key))
            if ["id", "createdAt", "updatedAt"].contains(top) { continue }
            try PocketBaseWire.validateFieldName(top, authCollection: schema?.isAuth ?? false)
            let column = schema?.column(top) ?? top
            for name in [column, PocketBaseWire.tagColumn(for: column)] where !out.contains(name) { out.append(name) }
        }
        return out.joined(separator: ",")
    }
}
