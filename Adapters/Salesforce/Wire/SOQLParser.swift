public import Foundation
public import MBaaSCore

/// SOQL the parser does not accept: the message, and where (0-based ``offset`` in Unicode scalars; 1-based
/// ``row`` and ``column``, as Salesforce's `ERROR at Row:1:Column:8` says it [capture: salesforce.md "Errors"]).
public struct SOQLParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    public var row: Int
    public var column: Int

    public init(message: String, offset: Int, row: Int, column: Int) {
        self.message = message
        self.offset = offset
        self.row = row
        self.column = column
    }

    public var description: String { "\(message) at Row:\(row):Column:\(column)" }

    /// The error a server answers: 400 `MALFORMED_QUERY` (no `fields` member [capture]).
    public var mbaasError: MBaaSError {
        MBaaSError(.invalidRequest, description, vendorCode: "MALFORMED_QUERY", httpStatus: 400)
    }
}

extension SOQLQuery {
    /// Parses the subset: `SELECT f1, f2 | COUNT() FROM Type [WHERE cond] [ORDER BY f [ASC|DESC] [NULLS FIRST|LAST],
    /// …] [LIMIT n] [OFFSET n]`, keywords in any case (MobileSync writes lower case [sdk]); conditions with
    /// `AND`/`OR` (not mixed without parentheses [doc]), `NOT`, parentheses, `= != <> < <= > >=`, `LIKE`, `IN`,
    /// `NOT IN`; values `null`, `true`/`false`, numbers, quoted strings with SOQL's escapes, date and datetime
    /// literals. Field names may be dotted (`Owner.Name`). Anything else throws ``SOQLParseError`` with its position.
    public static func parse(_ text: String) throws(SOQLParseError) -> SOQLQuery {
        var p = SOQLParser(text)
        return try p.query()
    }
}

struct SOQLParser {
    enum Token: Equatable {
        case word(String)                 // identifiers and keywords, dotted paths included
        case number(String)
        case string([(Unicode.Scalar, Bool)])   // (scalar, was escaped)
        case date(Date)
        case dateTime(Date)
        case symbol(String)
        case end

        static func == (a: Token, b: Token) -> Bool {
            switch (a, b) {
            case (.word(let x), .word(let y)), (.number(let x), .number(let y)), (.symbol(let x), .symbol(let y)): x == y
            case (.end, .end): true
            default: false
            }
        }
    }

    let scalars: [Unicode.Scalar]
    var pos = 0
    var token: Token = .end
    var tokenStart = 0

    init(_ text: String) { scalars = Array(text.unicodeScalars) }

    func error(_ message: String, at offset: Int) -> SOQLParseError {
        var row = 1, col = 1
        for s in scalars.prefix(offset) {
            if s == "\n" { row += 1; col = 1 } else { col += 1 }
        }
        return SOQLParseError(message: message, offset: offset, row: row, column: col)
    }

    var tokenText: String {
        switch token {
        case .end: "end of query"
        default: "'" + String(String.UnicodeScalarView(scalars[tokenStart..<min(pos, scalars.count)])) + "'"
        }
    }

    func unexpected() -> SOQLParseError { error("unexpected token: \(tokenText)", at: tokenStart) }

    static func isLetter(_ c: Unicode.Scalar) -> Bool { ("a"..."z").contains(c) || ("A"..."Z").contains(c) }
    static func isDigit(_ c: Unicode.Scalar) -> Bool { ("0"..."9").contains(c) }

    mutating func advance() throws(SOQLParseError) {
        while pos < scalars.count, scalars[pos].properties.isWhitespace { pos += 1 }
        tokenStart = pos
        guard pos < scalars.count else { token = .end; return }
        let c = scalars[pos]
        if Self.isLetter(c) || c == "_" {
            var s = ""
            while pos < scalars.count, Self.isLetter(scalars[pos]) || Self.isDigit(scalars[pos]) || scalars[pos] == "_" || scalars[pos] == "." {
                s.unicodeScalars.append(scalars[pos]); pos += 1
            }
            if s.hasSuffix(".") || s.contains("..") { throw error("unexpected token: '\(s)'", at: tokenStart) }
            token = .word(s)
            return
        }
        if Self.isDigit(c) || ((c == "-" || c == "+") && pos + 1 < scalars.count && Self.isDigit(scalars[pos + 1])) {
            if Self.isDigit(c), let t = try dateToken() { token = t; return }
            var s = String(c); pos += 1
            var sawPoint = false
            while pos < scalars.count, Self.isDigit(scalars[pos]) || (scalars[pos] == "." && !sawPoint) {
                if scalars[pos] == "." { sawPoint = true }
                s.unicodeScalars.append(scalars[pos]); pos += 1
            }
            if s.hasSuffix(".") { throw error("unexpected token: '\(s)'", at: tokenStart) }
            if pos < scalars.count, Self.isLetter(scalars[pos]) || scalars[pos] == "_" {
                throw error("unexpected token: '\(s)\(scalars[pos])'", at: tokenStart)
            }
            token = .number(s)
            return
        }
        if c == "'" {
            pos += 1
            var out: [(Unicode.Scalar, Bool)] = []
            while true {
                guard pos < scalars.count else { throw error("unterminated string literal", at: tokenStart) }
                let d = scalars[pos]
                if d == "'" { pos += 1; break }
                if d == "\\" {
                    guard pos + 1 < scalars.count else { throw error("unterminated string literal", at: tokenStart) }
                    let e = scalars[pos + 1]
                    let decoded: Unicode.Scalar? = switch e {
                    case "n", "N": "\n"
                    case "r", "R": "\r"
                    case "t", "T": "\t"
                    case "b", "B": "\u{08}"
                    case "f", "F": "\u{0C}"
                    case "\"", "'", "\\", "%", "_": e
                    default: nil
                    }
                    guard let decoded else {
                        throw error("invalid escape sequence '\\\(e)' in a string literal (valid: \\n \\r \\t \\b \\f \\\" \\' \\\\, and \\% \\_ in LIKE)", at: pos)
                    }
                    out.append((decoded, true))
                    pos += 2
                    continue
                }
                out.append((d, false))
                pos += 1
            }
            token = .string(out)
            return
        }
        let two = pos + 1 < scalars.count ? String(c) + String(scalars[pos + 1]) : ""
        if ["!=", "<>", "<=", ">="].contains(two) { token = .symbol(two == "<>" ? "!=" : two); pos += 2; return }
        if "(),=<>".unicodeScalars.contains(c) { token = .symbol(String(c)); pos += 1; return }
        pos += 1
        throw error("unexpected token: '\(c)'", at: tokenStart)
    }

    /// `yyyy-MM-dd` or a datetime `yyyy-MM-ddTHH:mm:ss[.SSS](Z|±hh:mm|±hhmm)` at `pos`; `nil` when the digits are
    /// not followed by `-` (a number).
    mutating func dateToken() throws(SOQLParseError) -> Token? {
        guard pos + 4 < scalars.count, scalars[pos..<pos + 4].allSatisfy(Self.isDigit), scalars[pos + 4] == "-" else { return nil }
        var end = pos
        while end < scalars.count, Self.isDigit(scalars[end]) || ":-+.TZtz".unicodeScalars.contains(scalars[end]) { end += 1 }
        let text = String(String.UnicodeScalarView(scalars[pos..<end]))
        if text.count == 10, let d = SalesforceDateTime.parseDate(text) { pos = end; return .date(d) }
        if text.count > 10, let d = SalesforceDateTime.parse(text.replacingOccurrences(of: "t", with: "T").replacingOccurrences(of: "z", with: "Z")) {
            pos = end; return .dateTime(d)
        }
        throw error("invalid date or datetime literal '\(text)' (yyyy-MM-dd, or yyyy-MM-ddThh:mm:ss[.SSS] with Z or an offset)", at: pos)
    }

    func isKeyword(_ k: String) -> Bool {
        if case .word(let w) = token { return w.uppercased() == k }
        return false
    }

    mutating func expectKeyword(_ k: String) throws(SOQLParseError) {
        guard isKeyword(k) else { throw error("unexpected token: \(tokenText), expecting '\(k)'", at: tokenStart) }
        try advance()
    }

    mutating func expectSymbol(_ s: String) throws(SOQLParseError) {
        guard token == .symbol(s) else { throw error("unexpected token: \(tokenText), expecting '\(s)'", at: tokenStart) }
        try advance()
    }

    static let reserved: Set<String> = ["SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "IN", "LIKE", "ORDER", "BY",
                                        "LIMIT", "OFFSET", "NULL", "TRUE", "FALSE", "ASC", "DESC", "NULLS", "INCLUDES",
                                        "EXCLUDES", "GROUP", "HAVING", "USING", "WITH", "FOR"]

    mutating func name(_ what: String) throws(SOQLParseError) -> String {
        guard case .word(let w) = token, !Self.reserved.contains(w.uppercased()) else {
            throw error("unexpected token: \(tokenText), expecting \(what)", at: tokenStart)
        }
        try advance()
        return w
    }

    mutating func integer(_ what: String) throws(SOQLParseError) -> Int {
        guard case .number(let n) = token, let v = Int(n), v >= 0 else {
            throw error("unexpected token: \(tokenText), expecting a non-negative integer after \(what)", at: tokenStart)
        }
        try advance()
        return v
    }

    mutating func query() throws(SOQLParseError) -> SOQLQuery {
        try advance()
        try expectKeyword("SELECT")
        let selection: SOQLQuery.Selection
        if isKeyword("COUNT") {
            try advance()
            try expectSymbol("(")
            try expectSymbol(")")
            selection = .count
        } else {
            var fields = [try name("a field name")]
            while token == .symbol(",") {
                try advance()
                fields.append(try name("a field name"))
            }
            selection = .fields(fields)
        }
        try expectKeyword("FROM")
        var q = SOQLQuery(selection: selection, from: try name("an object name"))
        if q.from.contains(".") { throw error("unexpected token: '\(q.from)', expecting an object name", at: tokenStart) }
        if isKeyword("WHERE") {
            try advance()
            q.condition = try condition()
        }
        if isKeyword("ORDER") {
            try advance()
            try expectKeyword("BY")
            repeat {
                if token == .symbol(",") { try advance() }
                var o = SOQLOrder(try name("a field name"))
                if isKeyword("ASC") { try advance() } else if isKeyword("DESC") { o.ascending = false; try advance() }
                if isKeyword("NULLS") {
                    try advance()
                    if isKeyword("FIRST") { o.nullsFirst = true } else if isKeyword("LAST") { o.nullsFirst = false } else {
                        throw error("unexpected token: \(tokenText), expecting FIRST or LAST", at: tokenStart)
                    }
                    try advance()
                }
                q.orderBy.append(o)
            } while token == .symbol(",")
        }
        if isKeyword("LIMIT") { try advance(); q.limit = try integer("LIMIT") }
        if isKeyword("OFFSET") { try advance(); q.offset = try integer("OFFSET") }
        guard token == .end else { throw unexpected() }
        return q
    }

    /// `unary (AND unary)*` or `unary (OR unary)*`; mixing the two without parentheses is refused, as SOQL does.
    mutating func condition() throws(SOQLParseError) -> SOQLCondition {
        let first = try unary()
        var items = [first]
        var joiner: String?
        while isKeyword("AND") || isKeyword("OR") {
            guard case .word(let w) = token else { break }
            let j = w.uppercased()
            if let joiner, joiner != j {
                throw error("unexpected token: \(tokenText): AND and OR may not be mixed without parentheses", at: tokenStart)
            }
            joiner = j
            try advance()
            items.append(try unary())
        }
        guard let joiner else { return first }
        return joiner == "AND" ? .and(items) : .or(items)
    }

    mutating func unary() throws(SOQLParseError) -> SOQLCondition {
        if isKeyword("NOT") {
            try advance()
            return .not(try unary())
        }
        if token == .symbol("(") {
            try advance()
            let c = try condition()
            try expectSymbol(")")
            return c
        }
        let field = try name("a field name")
        if isKeyword("LIKE") {
            try advance()
            guard case .string(let chars) = token else {
                throw error("unexpected token: \(tokenText), expecting a quoted LIKE pattern", at: tokenStart)
            }
            try advance()
            return .like(field, SOQLLikePattern(chars.map { c, escaped in
                if !escaped, c == "%" { return .anyRun }
                if !escaped, c == "_" { return .anyOne }
                return .literal(Character(c))
            }))
        }
        if isKeyword("IN") || isKeyword("NOT") {
            let negated = isKeyword("NOT")
            try advance()
            if negated { try expectKeyword("IN") }
            try expectSymbol("(")
            var values = [try value()]
            while token == .symbol(",") {
                try advance()
                values.append(try value())
            }
            try expectSymbol(")")
            return negated ? .notIn(field, values) : .in(field, values)
        }
        guard case .symbol(let s) = token, let op = SOQLComparison(rawValue: s) else {
            throw error("unexpected token: \(tokenText), expecting an operator (= != < <= > >= LIKE IN NOT IN)", at: tokenStart)
        }
        try advance()
        return .compare(field, op, try value())
    }

    mutating func value() throws(SOQLParseError) -> SOQLValue {
        let start = tokenStart
        let v: SOQLValue
        switch token {
        case .word(let w):
            switch w.uppercased() {
            case "NULL": v = .null
            case "TRUE": v = .bool(true)
            case "FALSE": v = .bool(false)
            default: throw error("unexpected token: \(tokenText), expecting a value (bind variables and date literals such as TODAY are not supported)", at: start)
            }
        case .number(let n):
            let digits = n.hasPrefix("+") ? String(n.dropFirst()) : n
            if !digits.contains("."), let i = Int64(digits) { v = .int(i) }
            else if let d = Double(digits), d.isFinite { v = .double(d) }
            else { throw error("number out of range: '\(n)'", at: start) }
        case .string(let chars):
            if let bad = chars.first(where: { $0.1 && ($0.0 == "%" || $0.0 == "_") }) {
                throw error("invalid escape sequence '\\\(bad.0)' outside a LIKE pattern", at: start)
            }
            var s = ""
            s.unicodeScalars.append(contentsOf: chars.map(\.0))
            v = .string(s)
        case .date(let d): v = .date(d)
        case .dateTime(let d): v = .dateTime(d)
        default: throw error("unexpected token: \(tokenText), expecting a value", at: start)
        }
        try advance()
        return v
    }
}
