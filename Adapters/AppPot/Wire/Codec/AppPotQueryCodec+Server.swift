import Foundation
public import MBaaSCore

/// The other direction of ``AppPotQueryTranslator``: a query body as a server reads it, to the neutral query.
///
/// The `where.expression.source` is an SQL fragment (reference A8). This reads the subset AppPot SDKs and the
/// MBaaSKit client write: `#Alias.column` (or a bare column) compared with `?` (or a number or `'text'`
/// literal) by `=`, `!=`/`<>`, `<`, `<=`, `>`, `>=`; `IS [NOT] NULL`; `[NOT] LIKE ?` with a pattern that is a
/// prefix followed by one `%` (other wildcards are refused); `[NOT] IN (?, …)`; `AND`, `OR`, `NOT` and parentheses.
/// Keywords are case-insensitive. Anything else is ``MBaaSError/Kind/invalidRequest`` (errCode 220, "Cannot
/// execute query").
///
/// SQL's NULL rules are kept: a comparison, `LIKE` or `IN` on a NULL column is false (and stays false under
/// `NOT`), so each translates to the neutral operator *and* `exists`. Columns become neutral keys the way the
/// client maps them: `objectId` is `id`, `serverCreateTime` `createdAt`, `serverUpdateTime` `updatedAt`; others
/// keep their name. Parameters are neutral values as JSON gives them (numbers `int`/`double`, strings `string`):
/// the server converts them by column type.
extension AppPotQueryTranslator {
    /// The neutral key of a column name (inverse of the client's key mapping).
    public static func key(ofColumn column: String) -> String {
        switch column {
        case "objectId": "id"
        case "serverCreateTime": "createdAt"
        case "serverUpdateTime": "updatedAt"
        default: column
        }
    }

    /// Parses an expression with its positional parameters; `alias` is the query's alias (a `#Other.column`
    /// reference is refused: joins are not read).
    public static func predicate(source: String, params: [JSON], alias: String) throws(MBaaSError) -> QueryPredicate {
        var parser = ExpressionParser(tokens: try tokenize(source), params: params, alias: alias)
        let p = try parser.expression()
        guard parser.index == parser.tokens.count else { throw failure("unexpected '\(parser.tokens[parser.index].text)'") }
        guard parser.nextParam == params.count else { throw failure("\(params.count) params for \(parser.nextParam) placeholders") }
        return p
    }

    /// The neutral sort of an `orderBy` (`#Alias.column` or a bare column).
    public static func sort(_ orders: [AppPotQueryBody.Order], alias: String) throws(MBaaSError) -> [SortKey] {
        var keys: [SortKey] = []
        for o in orders {
            keys.append(SortKey(key(ofColumn: try column(o.column, alias: alias)), ascending: !o.descending))
        }
        return keys
    }

    /// The column a reference names: `#Alias.column`, `Alias.column` or `column`.
    static func column(_ reference: String, alias: String) throws(MBaaSError) -> String {
        var r = reference
        if r.hasPrefix("#") { r.removeFirst() }
        let parts = r.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        switch parts.count {
        case 1: break
        case 2 where parts[0] == alias: r = parts[1]
        default: throw failure("unknown column reference '\(reference)' (only #\(alias).column is read)")
        }
        guard AppPotIdentifier.isValid(r) else { throw failure("invalid column '\(reference)'") }
        return r
    }

    /// errCode 220 "Cannot execute query", naming the problem.
    public static func failure(_ message: String) -> MBaaSError {
        MBaaSError(.invalidRequest, "Cannot execute query: \(message)", vendorCode: "220")
    }

    struct Token: Equatable {
        enum Kind { case word, symbol, placeholder, number, string }
        var kind: Kind
        var text: String
        func isKeyword(_ k: String) -> Bool { kind == .word && text.uppercased() == k }
    }

    static func tokenize(_ source: String) throws(MBaaSError) -> [Token] {
        var tokens: [Token] = []
        let chars = Array(source)
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c.isWhitespace { i += 1; continue }
            if c == "?" { tokens.append(Token(kind: .placeholder, text: "?")); i += 1; continue }
            if c == "(" || c == ")" || c == "," { tokens.append(Token(kind: .symbol, text: String(c))); i += 1; continue }
            if "=<>!".contains(c) {
                var op = String(c)
                if i + 1 < chars.count, "=>".contains(chars[i + 1]), !(c == "=") { op.append(chars[i + 1]); i += 1 }
                i += 1
                guard ["=", "!=", "<>", "<", "<=", ">", ">="].contains(op) else { throw failure("unknown operator '\(op)'") }
                tokens.append(Token(kind: .symbol, text: op))
                continue
            }
            if c == "'" {
                var s = ""
                i += 1
                var closed = false
                while i < chars.count {
                    if chars[i] == "'" {
                        if i + 1 < chars.count, chars[i + 1] == "'" { s.append("'"); i += 2; continue }
                        closed = true; i += 1; break
                    }
                    s.append(chars[i]); i += 1
                }
                guard closed else { throw failure("unterminated string") }
                tokens.append(Token(kind: .string, text: s))
                continue
            }
            if c.isNumber || (c == "-" && i + 1 < chars.count && chars[i + 1].isNumber) {
                var s = String(c)
                i += 1
                while i < chars.count, chars[i].isNumber || chars[i] == "." || chars[i] == "e" || chars[i] == "E" { s.append(chars[i]); i += 1 }
                tokens.append(Token(kind: .number, text: s))
                continue
            }
            if c == "#" || c == "_" || c.isLetter {
                var s = String(c)
                i += 1
                while i < chars.count, chars[i] == "_" || chars[i] == "." || chars[i].isLetter || chars[i].isNumber { s.append(chars[i]); i += 1 }
                tokens.append(Token(kind: .word, text: s))
                continue
            }
            throw failure("unexpected character '\(c)'")
        }
        return tokens
    }

    struct ExpressionParser {
        let tokens: [Token]
        let params: [JSON]
        let alias: String
        var index = 0
        var nextParam = 0

        init(tokens: [Token], params: [JSON], alias: String) {
            self.tokens = tokens
            self.params = params
            self.alias = alias
        }

        var peek: Token? { index < tokens.count ? tokens[index] : nil }

        mutating func take() throws(MBaaSError) -> Token {
            guard let t = peek else { throw AppPotQueryTranslator.failure("unexpected end of expression") }
            index += 1
            return t
        }

        mutating func expect(_ text: String) throws(MBaaSError) {
            let t = try take()
            guard t.text.uppercased() == text else { throw AppPotQueryTranslator.failure("expected '\(text)', got '\(t.text)'") }
        }

        mutating func expression() throws(MBaaSError) -> QueryPredicate {
            var parts = [try conjunction()]
            while peek?.isKeyword("OR") == true { index += 1; parts.append(try conjunction()) }
            return parts.count == 1 ? parts[0] : .or(parts)
        }

        mutating func conjunction() throws(MBaaSError) -> QueryPredicate {
            var parts = [try unary()]
            while peek?.isKeyword("AND") == true { index += 1; parts.append(try unary()) }
            return parts.count == 1 ? parts[0] : .and(parts)
        }

        mutating func unary() throws(MBaaSError) -> QueryPredicate {
            if peek?.isKeyword("NOT") == true {
                index += 1
                return .not(try unary())
            }
            if peek == Token(kind: .symbol, text: "(") {
                index += 1
                let p = try expression()
                try expect(")")
                return p
            }
            return try comparison()
        }

        mutating func value() throws(MBaaSError) -> Value {
            let t = try take()
            switch t.kind {
            case .placeholder:
                guard nextParam < params.count else { throw AppPotQueryTranslator.failure("more placeholders than params") }
                defer { nextParam += 1 }
                return Self.value(params[nextParam])
            case .number:
                if let i = Int64(t.text) { return .int(i) }
                if let d = Double(t.text) { return .double(d) }
                throw AppPotQueryTranslator.failure("bad number '\(t.text)'")
            case .string: return .string(t.text)
            default: throw AppPotQueryTranslator.failure("expected a value, got '\(t.text)'")
            }
        }

        static func value(_ json: JSON) -> Value {
            if let i = json.intValue { return .int(i) }
            if let d = json.doubleValue { return .double(d) }
            if let b = json.boolValue { return .bool(b) }
            if let s = json.stringValue { return .string(s) }
            return json.isNull ? .null : .string(json.printed())
        }

        mutating func comparison() throws(MBaaSError) -> QueryPredicate {
            let ref = try take()
            guard ref.kind == .word else { throw AppPotQueryTranslator.failure("expected a column, got '\(ref.text)'") }
            let key = AppPotQueryTranslator.key(ofColumn: try AppPotQueryTranslator.column(ref.text, alias: alias))
            let present = QueryPredicate.exists(key, true)
            let op = try take()
            if op.isKeyword("IS") {
                var negated = false
                if peek?.isKeyword("NOT") == true { index += 1; negated = true }
                try expect("NULL")
                return .exists(key, negated)
            }
            var negated = false
            var verb = op
            if op.isKeyword("NOT") { negated = true; verb = try take() }
            if verb.isKeyword("LIKE") {
                guard case .string(let pattern) = try value() else { throw AppPotQueryTranslator.failure("LIKE needs a text pattern") }
                let p = QueryPredicate.and([present, .prefix(key, try Self.prefix(ofLike: pattern))])
                return negated ? .and([present, .not(p)]) : p
            }
            if verb.isKeyword("IN") {
                try expect("(")
                var values = [try value()]
                while peek == Token(kind: .symbol, text: ",") { index += 1; values.append(try value()) }
                try expect(")")
                return .and([present, negated ? .notIn(key, values) : .in(key, values)])
            }
            guard !negated, op.kind == .symbol else { throw AppPotQueryTranslator.failure("unknown operator '\(op.text)'") }
            let cmp: QueryPredicate.Comparison
            switch op.text {
            case "=": cmp = .eq
            case "!=", "<>": cmp = .ne
            case "<": cmp = .lt
            case "<=": cmp = .lte
            case ">": cmp = .gt
            case ">=": cmp = .gte
            default: throw AppPotQueryTranslator.failure("unknown operator '\(op.text)'")
            }
            let v = try value()
            if v.isNull { return .never(key) }  // `= NULL` is never true in SQL
            return .and([present, .compare(key, cmp, v)])
        }

        /// The prefix of a `LIKE` pattern `prefix%` (with `\` escapes, as ``AppPotQueryTranslator/escapeLike(_:)``
        /// writes them); other wildcards are refused.
        static func prefix(ofLike pattern: String) throws(MBaaSError) -> String {
            var out = ""
            var escaped = false
            var chars = Array(pattern)
            guard chars.last == "%" else { throw AppPotQueryTranslator.failure("only LIKE 'prefix%' patterns are supported") }
            chars.removeLast()
            if chars.last == "\\" && !(chars.count >= 2 && chars[chars.count - 2] == "\\") {
                throw AppPotQueryTranslator.failure("only LIKE 'prefix%' patterns are supported")
            }
            for c in chars {
                if escaped { out.append(c); escaped = false; continue }
                if c == "\\" { escaped = true; continue }
                if c == "%" || c == "_" { throw AppPotQueryTranslator.failure("only LIKE 'prefix%' patterns are supported") }
                out.append(c)
            }
            return out
        }
    }
}

extension QueryPredicate {
    /// A predicate no record matches.
    static func never(_ key: String) -> QueryPredicate { .and([.exists(key, true), .exists(key, false)]) }
}
