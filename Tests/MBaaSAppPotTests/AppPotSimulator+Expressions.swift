import Foundation
import MBaaSCore

// MARK: - Expression evaluation (A8: SQL fragments with #Alias.column and positional ?)

enum SimToken: Equatable {
    case lparen, rparen, placeholder
    case column(alias: String, name: String)
    case op(String)
    case keyword(String)
    case number(Double)
    case string(String)
}

struct SimError: Error, CustomStringConvertible {
    var description: String
}

enum SimLexer {
    static func tokens(_ source: String) throws -> [SimToken] {
        var out: [SimToken] = []
        let chars = Array(source)
        var i = 0
        func isIdent(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }
        while i < chars.count {
            let c = chars[i]
            if c.isWhitespace { i += 1; continue }
            switch c {
            case "(": out.append(.lparen); i += 1
            case ")": out.append(.rparen); i += 1
            case "?": out.append(.placeholder); i += 1
            case "#":
                var j = i + 1
                while j < chars.count, isIdent(chars[j]) { j += 1 }
                guard j < chars.count, chars[j] == "." else { throw SimError(description: "bad column reference") }
                let alias = String(chars[(i + 1)..<j])
                var k = j + 1
                while k < chars.count, isIdent(chars[k]) { k += 1 }
                guard k > j + 1 else { throw SimError(description: "bad column reference") }
                out.append(.column(alias: alias, name: String(chars[(j + 1)..<k])))
                i = k
            case "=": out.append(.op("=")); i += 1
            case "!":
                guard i + 1 < chars.count, chars[i + 1] == "=" else { throw SimError(description: "bad operator") }
                out.append(.op("!=")); i += 2
            case "<", ">":
                if i + 1 < chars.count, chars[i + 1] == "=" { out.append(.op(String(c) + "=")); i += 2 }
                else if c == "<", i + 1 < chars.count, chars[i + 1] == ">" { out.append(.op("!=")); i += 2 }
                else { out.append(.op(String(c))); i += 1 }
            case "'":
                var j = i + 1
                var s = ""
                while j < chars.count {
                    if chars[j] == "'" {
                        if j + 1 < chars.count, chars[j + 1] == "'" { s.append("'"); j += 2; continue }
                        break
                    }
                    s.append(chars[j]); j += 1
                }
                guard j < chars.count else { throw SimError(description: "unterminated string") }
                out.append(.string(s)); i = j + 1
            default:
                if c.isNumber || c == "-" {
                    var j = i + 1
                    while j < chars.count, chars[j].isNumber || chars[j] == "." { j += 1 }
                    guard let d = Double(String(chars[i..<j])) else { throw SimError(description: "bad number") }
                    out.append(.number(d)); i = j
                } else if c.isLetter {
                    var j = i
                    while j < chars.count, isIdent(chars[j]) { j += 1 }
                    let word = String(chars[i..<j]).uppercased()
                    guard ["AND", "OR", "NOT", "IS", "NULL", "LIKE"].contains(word) else {
                        throw SimError(description: "unknown word \(word)")
                    }
                    out.append(.keyword(word)); i = j
                } else {
                    throw SimError(description: "unexpected character \(c)")
                }
            }
        }
        return out
    }
}

indirect enum SimOperand {
    case column(String)
    case param(Int)
    case literal(JSON)
}

indirect enum SimExpr {
    case and(SimExpr, SimExpr)
    case or(SimExpr, SimExpr)
    case not(SimExpr)
    case compare(SimOperand, String, SimOperand)
    case isNull(SimOperand, negated: Bool)
    case like(SimOperand, SimOperand, negated: Bool)

    var placeholders: Int {
        func count(_ o: SimOperand) -> Int { if case .param = o { 1 } else { 0 } }
        switch self {
        case .and(let a, let b), .or(let a, let b): return a.placeholders + b.placeholders
        case .not(let a): return a.placeholders
        case .compare(let a, _, let b), .like(let a, let b, _): return count(a) + count(b)
        case .isNull(let a, _): return count(a)
        }
    }

    /// SQL three-valued logic: `nil` is UNKNOWN.
    func evaluate(row: [String: JSON], table: AppPotSimulator.Table, params: [JSON]) throws -> Bool? {
        func value(_ o: SimOperand) throws -> (JSON, String?) {
            switch o {
            case .column(let c):
                guard let def = table.columns[c] else { throw SimError(description: "unknown column \(c)") }
                return (row[c] ?? .null, c == "serverCreateTime" || c == "serverUpdateTime" ? "time" : def.type)
            case .param(let i): return (params[i], nil)
            case .literal(let j): return (j, nil)
            }
        }
        switch self {
        case .and(let a, let b):
            let x = try a.evaluate(row: row, table: table, params: params), y = try b.evaluate(row: row, table: table, params: params)
            if x == false || y == false { return false }
            if x == nil || y == nil { return nil }
            return true
        case .or(let a, let b):
            let x = try a.evaluate(row: row, table: table, params: params), y = try b.evaluate(row: row, table: table, params: params)
            if x == true || y == true { return true }
            if x == nil || y == nil { return nil }
            return false
        case .not(let a):
            return try a.evaluate(row: row, table: table, params: params).map { !$0 }
        case .isNull(let o, let negated):
            let (v, _) = try value(o)
            return v.isNull != negated
        case .compare(let l, let op, let r):
            let (a, ta) = try value(l), (b, tb) = try value(r)
            if a.isNull || b.isNull { return nil }
            let c = SimValue.compare(a, b, type: ta ?? tb ?? "varchar", column: "")
            switch op {
            case "=": return c == 0
            case "!=": return c != 0
            case "<": return c < 0
            case "<=": return c <= 0
            case ">": return c > 0
            case ">=": return c >= 0
            default: throw SimError(description: "bad operator \(op)")
            }
        case .like(let l, let r, let negated):
            let (a, _) = try value(l), (b, _) = try value(r)
            if a.isNull || b.isNull { return nil }
            guard let pattern = SimValue.text(b) else { return nil }
            return SimValue.like(SimValue.text(a) ?? "", pattern) != negated
        }
    }
}

struct SimParser {
    var tokens: [SimToken]
    var alias: String
    var index = 0
    var params = 0

    init(tokens: [SimToken], alias: String) {
        self.tokens = tokens
        self.alias = alias
    }

    mutating func parse() throws -> SimExpr {
        let e = try orExpr()
        guard index == tokens.count else { throw SimError(description: "trailing tokens") }
        return e
    }

    private var peek: SimToken? { index < tokens.count ? tokens[index] : nil }

    private mutating func orExpr() throws -> SimExpr {
        var e = try andExpr()
        while peek == .keyword("OR") { index += 1; e = .or(e, try andExpr()) }
        return e
    }

    private mutating func andExpr() throws -> SimExpr {
        var e = try notExpr()
        while peek == .keyword("AND") { index += 1; e = .and(e, try notExpr()) }
        return e
    }

    private mutating func notExpr() throws -> SimExpr {
        if peek == .keyword("NOT") { index += 1; return .not(try notExpr()) }
        if peek == .lparen {
            index += 1
            let e = try orExpr()
            guard peek == .rparen else { throw SimError(description: "missing )") }
            index += 1
            return e
        }
        return try comparison()
    }

    private mutating func operand() throws -> SimOperand {
        guard let t = peek else { throw SimError(description: "missing operand") }
        index += 1
        switch t {
        case .column(let a, let name):
            guard a == alias else { throw SimError(description: "unknown alias \(a)") }
            return .column(name)
        case .placeholder:
            params += 1
            return .param(params - 1)
        case .number(let d): return .literal(d.rounded() == d ? .int(Int64(d)) : .double(d))
        case .string(let s): return .literal(.string(s))
        default: throw SimError(description: "bad operand")
        }
    }

    private mutating func comparison() throws -> SimExpr {
        let left = try operand()
        switch peek {
        case .op(let op)?:
            index += 1
            return .compare(left, op, try operand())
        case .keyword("IS")?:
            index += 1
            var negated = false
            if peek == .keyword("NOT") { negated = true; index += 1 }
            guard peek == .keyword("NULL") else { throw SimError(description: "IS without NULL") }
            index += 1
            return .isNull(left, negated: negated)
        case .keyword("NOT")?:
            index += 1
            guard peek == .keyword("LIKE") else { throw SimError(description: "NOT without LIKE") }
            index += 1
            return .like(left, try operand(), negated: true)
        case .keyword("LIKE")?:
            index += 1
            return .like(left, try operand(), negated: false)
        default:
            throw SimError(description: "missing operator")
        }
    }
}

enum SimValue {
    static func text(_ v: JSON) -> String? {
        switch v {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): b ? "1" : "0"
        default: nil
        }
    }

    static func number(_ v: JSON) -> Double? {
        if let d = v.doubleValue { return d }
        if let b = v.boolValue { return b ? 1 : 0 }
        return v.stringValue.flatMap { Double($0) }
    }

    /// A double as MySQL prints a DOUBLE column: `5`, `5.5`.
    static func mysqlDouble(_ d: Double) -> String {
        if d.rounded() == d, abs(d) < 1e15 { return String(Int64(d)) }
        return String(d)
    }

    /// Compares as the column type: numbers for integer/long/double/datetime, server times as instants, text
    /// case-insensitively otherwise (MySQL's default `_general_ci` collations). NULL is the lowest value, so it
    /// sorts first ascending, as MySQL does.
    static func compare(_ a: JSON, _ b: JSON, type: String, column: String) -> Int {
        if a.isNull && b.isNull { return 0 }
        if a.isNull { return -1 }
        if b.isNull { return 1 }
        switch type {
        case "integer", "long", "double", "float", "decimal", "datetime":
            guard let x = number(a), let y = number(b) else { return (text(a) ?? "") < (text(b) ?? "") ? -1 : 1 }
            return x == y ? 0 : (x < y ? -1 : 1)
        case "time":
            guard let x = text(a).flatMap(ISO8601.parse), let y = text(b).flatMap(ISO8601.parse) else { return 0 }
            return x == y ? 0 : (x < y ? -1 : 1)
        default:
            let x = Array(fold(text(a) ?? "").unicodeScalars.map(\.value)), y = Array(fold(text(b) ?? "").unicodeScalars.map(\.value))
            return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        }
    }

    /// Text as a case- and accent-insensitive MySQL collation compares it (trailing spaces ignored, PAD SPACE).
    static func fold(_ s: String) -> String {
        var t = s.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
        while t.hasSuffix(" ") { t.removeLast() }
        return t
    }

    /// SQL LIKE with `%`, `_` and the default escape character `\`, case-insensitive as MySQL's default
    /// collations.
    static func like(_ text: String, _ pattern: String) -> Bool {
        let t = Array(text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)),
            p = Array(pattern.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil))
        func match(_ i: Int, _ j: Int) -> Bool {
            if j == p.count { return i == t.count }
            if p[j] == "\\", j + 1 < p.count {
                return i < t.count && t[i] == p[j + 1] && match(i + 1, j + 2)
            }
            if p[j] == "%" {
                var k = i
                while k <= t.count {
                    if match(k, j + 1) { return true }
                    k += 1
                }
                return false
            }
            if p[j] == "_" { return i < t.count && match(i + 1, j + 1) }
            return i < t.count && t[i] == p[j] && match(i + 1, j + 1)
        }
        return match(0, 0)
    }
}
