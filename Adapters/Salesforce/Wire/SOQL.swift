public import Foundation
public import MBaaSCore

/// A SOQL literal value.
///
/// Numbers keep their kind (`.int` prints as digits, `.double` in plain decimal notation: SOQL has no exponent
/// form); ``date(_:)`` is a date literal (`2024-01-02`, midnight UTC), ``dateTime(_:)`` a datetime literal, printed
/// `2024-01-02T03:04:05.000+0000` as MobileSync sends it [sdk] and read in every form the SOQL reference lists
/// (`Z`, `±hh:mm`) [doc].
public enum SOQLValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case date(Date)
    case dateTime(Date)

    /// The literal as SOQL text.
    public var text: String {
        switch self {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): SOQLValue.plainDecimal(d)
        case .string(let s): SOQLValue.quote(s)
        case .date(let d): SalesforceDateTime.formatDate(d)
        case .dateTime(let d): SalesforceDateTime.format(d)
        }
    }

    /// `'…'` with SOQL's escapes: `\\`, `\'`, `\"`, `\n`, `\r`, `\t`, `\b`, `\f` [doc: SOQL "Quoted String Escape
    /// Sequences"]. Every other character, `%` and `_` included (wildcards only inside LIKE), is written as is.
    public static func quote(_ s: String) -> String {
        var out = "'"
        out.reserveCapacity(s.utf8.count + 2)
        for c in s.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "'": out += "\\'"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "'"
    }

    /// A finite double in plain decimal notation (`1e-07` → `0.0000001`), the shortest digits that read back the
    /// same double.
    public static func plainDecimal(_ d: Double) -> String {
        let s = "\(d)"
        guard let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }) else { return s }
        let mantissa = String(s[..<e])
        guard let exponent = Int(s[s.index(after: e)...]) else { return s }
        let negative = mantissa.hasPrefix("-")
        let digitsPart = negative ? String(mantissa.dropFirst()) : mantissa
        let pieces = digitsPart.split(separator: ".", omittingEmptySubsequences: false)
        let intDigits = String(pieces[0])
        let fracDigits = pieces.count > 1 ? String(pieces[1]) : ""
        var digits = intDigits + fracDigits
        var point = intDigits.count + exponent
        if point <= 0 {
            digits = String(repeating: "0", count: -point + 1) + digits
            point = 1
        } else if point > digits.count {
            digits += String(repeating: "0", count: point - digits.count)
        }
        var whole = String(digits.prefix(point))
        var frac = String(digits.dropFirst(point))
        while frac.hasSuffix("0") { frac.removeLast() }
        while whole.count > 1, whole.hasPrefix("0") { whole.removeFirst() }
        return (negative ? "-" : "") + whole + "." + (frac.isEmpty ? "0" : frac)
    }
}

/// A SOQL LIKE pattern: literal characters and the wildcards `%` (any run) and `_` (one character). Literal `%`,
/// `_` and `\` are escaped with a backslash when printed [doc: SOQL "LIKE"]. LIKE matches without regard to case.
public struct SOQLLikePattern: Sendable, Hashable {
    public enum Element: Sendable, Hashable {
        case literal(Character)
        case anyRun
        case anyOne
    }

    public var elements: [Element]
    public init(_ elements: [Element]) { self.elements = elements }

    /// The pattern as a quoted SOQL literal.
    public var text: String {
        var out = "'"
        for e in elements {
            switch e {
            case .anyRun: out += "%"
            case .anyOne: out += "_"
            case .literal(let c):
                switch c {
                case "%": out += "\\%"
                case "_": out += "\\_"
                default:
                    let q = SOQLValue.quote(String(c))
                    out += q.dropFirst().dropLast()
                }
            }
        }
        return out + "'"
    }

    /// The pattern as an anchored regular expression (`.` for `_`, `.*` for `%`, literals escaped), to be matched
    /// with the `i` and `s` options.
    public var regularExpression: String {
        var out = "^"
        for e in elements {
            switch e {
            case .anyRun: out += ".*"
            case .anyOne: out += "."
            case .literal(let c):
                if "\\^$.|?*+()[]{}/-".contains(c) { out += "\\" }
                out.append(c)
            }
        }
        return out + "$"
    }
}

/// A SOQL comparison operator; `<>` is read as `!=`.
public enum SOQLComparison: String, Sendable, Hashable, CaseIterable {
    case eq = "=", ne = "!=", lt = "<", lte = "<=", gt = ">", gte = ">="
}

/// A WHERE condition.
public indirect enum SOQLCondition: Sendable, Hashable {
    case compare(String, SOQLComparison, SOQLValue)
    case like(String, SOQLLikePattern)
    case `in`(String, [SOQLValue])
    case notIn(String, [SOQLValue])
    case and([SOQLCondition])
    case or([SOQLCondition])
    case not(SOQLCondition)

    /// The condition as SOQL text. `and`/`or` groups nested in another condition are parenthesised (SOQL refuses
    /// AND and OR mixed without parentheses [doc]); `not` is `NOT (…)`.
    public var text: String { render(nested: false) }

    func render(nested: Bool) -> String {
        switch self {
        case .compare(let f, let op, let v): return "\(f) \(op.rawValue) \(v.text)"
        case .like(let f, let p): return "\(f) LIKE \(p.text)"
        case .in(let f, let vs): return "\(f) IN (\(vs.map(\.text).joined(separator: ", ")))"
        case .notIn(let f, let vs): return "\(f) NOT IN (\(vs.map(\.text).joined(separator: ", ")))"
        case .and(let cs): return Self.group(cs, " AND ", nested: nested)
        case .or(let cs): return Self.group(cs, " OR ", nested: nested)
        case .not(let c): return "NOT (" + c.render(nested: false) + ")"
        }
    }

    static func group(_ cs: [SOQLCondition], _ word: String, nested: Bool) -> String {
        if cs.count == 1 { return cs[0].render(nested: nested) }
        let inner = cs.map { $0.render(nested: true) }.joined(separator: word)
        return nested ? "(" + inner + ")" : inner
    }
}

/// One ORDER BY key.
public struct SOQLOrder: Sendable, Hashable {
    public var field: String
    public var ascending: Bool
    /// `NULLS FIRST` (`true`), `NULLS LAST` (`false`) or unsaid (`nil`: first ascending, last descending [doc]).
    public var nullsFirst: Bool?

    public init(_ field: String, ascending: Bool = true, nullsFirst: Bool? = nil) {
        self.field = field
        self.ascending = ascending
        self.nullsFirst = nullsFirst
    }

    public var text: String {
        field + (ascending ? " ASC" : " DESC") + (nullsFirst.map { $0 ? " NULLS FIRST" : " NULLS LAST" } ?? "")
    }
}

/// A SOQL query of the subset both ends speak:
/// `SELECT fields|COUNT() FROM Type [WHERE …] [ORDER BY …] [LIMIT n] [OFFSET n]`.
///
/// ``text`` prints it (keywords upper case, one space between clauses); ``parse(_:)`` reads it back. Every query
/// the printer emits parses to an equal value.
public struct SOQLQuery: Sendable, Hashable {
    public enum Selection: Sendable, Hashable {
        case fields([String])
        case count
    }

    public var selection: Selection
    public var from: String
    public var condition: SOQLCondition?
    public var orderBy: [SOQLOrder]
    public var limit: Int?
    public var offset: Int?

    public init(selection: Selection, from: String, condition: SOQLCondition? = nil, orderBy: [SOQLOrder] = [],
                limit: Int? = nil, offset: Int? = nil) {
        self.selection = selection
        self.from = from
        self.condition = condition
        self.orderBy = orderBy
        self.limit = limit
        self.offset = offset
    }

    public var text: String {
        var s = "SELECT "
        switch selection {
        case .fields(let fs): s += fs.joined(separator: ", ")
        case .count: s += "COUNT()"
        }
        s += " FROM " + from
        if let condition { s += " WHERE " + condition.text }
        if !orderBy.isEmpty { s += " ORDER BY " + orderBy.map(\.text).joined(separator: ", ") }
        if let limit { s += " LIMIT \(limit)" }
        if let offset { s += " OFFSET \(offset)" }
        return s
    }
}
