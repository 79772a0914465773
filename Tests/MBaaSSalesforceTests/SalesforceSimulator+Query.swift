import Foundation
import MBaaSCore

/// The simulator's SOQL subset and sObject Collections (independent of the Wire module's parser).
extension SalesforceSimulator {
    enum Lit: Equatable { case null, bool(Bool), num(Double), str(String), dt(String) }
    struct Cond { var field: String; var op: String; var value: Lit }

    /// Tokens: words, quoted strings (SOQL escapes), numbers, datetimes, operators.
    static func tokens(_ text: String) -> [String]? {
        var out: [String] = []
        let s = Array(text)
        var i = 0
        while i < s.count {
            let c = s[i]
            if c == " " || c == "\n" { i += 1; continue }
            if c == "'" {
                var lit = "'"
                i += 1
                while true {
                    guard i < s.count else { return nil }
                    if s[i] == "\\" {
                        guard i + 1 < s.count else { return nil }
                        switch s[i + 1] {
                        case "n": lit.append("\n")
                        case "r": lit.append("\r")
                        case "t": lit.append("\t")
                        case "b": lit.append("\u{08}")
                        case "f": lit.append("\u{0C}")
                        case "'", "\"", "\\": lit.append(s[i + 1])
                        default: return nil
                        }
                        i += 2
                        continue
                    }
                    if s[i] == "'" { i += 1; break }
                    lit.append(s[i]); i += 1
                }
                out.append(lit)
                continue
            }
            if "(),".contains(c) { out.append(String(c)); i += 1; continue }
            if "=!<>".contains(c) {
                var op = String(c); i += 1
                if i < s.count, s[i] == "=" { op.append("="); i += 1 }
                out.append(op)
                continue
            }
            var word = ""
            while i < s.count, !" \n(),=!<>'".contains(s[i]) { word.append(s[i]); i += 1 }
            out.append(word)
        }
        return out
    }

    static func literal(_ t: String) -> Lit? {
        if t.hasPrefix("'") { return .str(String(t.dropFirst())) }
        switch t.lowercased() {
        case "null": return .null
        case "true": return .bool(true)
        case "false": return .bool(false)
        default: break
        }
        if t.count == 28, t.contains("T") { return .dt(t) }
        return Double(t).map(Lit.num)
    }

    func soqlQuery(_ q: String, batch: Int) -> TransportResponse {
        func malformed(_ m: String) -> TransportResponse { restError(400, "MALFORMED_QUERY", m) }
        guard let t = Self.tokens(q), t.count >= 4, t[0].uppercased() == "SELECT" else { return malformed("unexpected token") }
        var i = 1
        var fields: [String] = []
        var countOnly = false
        if t[i].uppercased() == "COUNT", t[i + 1] == "(", t[i + 2] == ")" { countOnly = true; i += 3 } else {
            while i < t.count, t[i].uppercased() != "FROM" { if t[i] != "," { fields.append(t[i]) }; i += 1 }
        }
        guard i + 1 < t.count, t[i].uppercased() == "FROM" else { return malformed("expecting FROM") }
        let type = t[i + 1]
        i += 2
        var conds: [Cond] = []
        var sortField: String?, descending = false, limit: Int?, offset = 0
        if i < t.count, t[i].uppercased() == "WHERE" {
            i += 1
            while true {
                guard i + 2 < t.count + 0, let v = Self.literal(t[i + 2]) else { return malformed("bad condition") }
                guard ["=", "!=", "<", "<=", ">", ">="].contains(t[i + 1]) else { return malformed("simulator: operator \(t[i + 1])") }
                conds.append(Cond(field: t[i], op: t[i + 1], value: v))
                i += 3
                if i < t.count, t[i].uppercased() == "AND" { i += 1; continue }
                break
            }
        }
        if i + 2 < t.count, t[i].uppercased() == "ORDER" {
            sortField = t[i + 2]
            i += 3
            if i < t.count, ["ASC", "DESC"].contains(t[i].uppercased()) { descending = t[i].uppercased() == "DESC"; i += 1 }
        }
        if i + 1 < t.count, t[i].uppercased() == "LIMIT" { limit = Int(t[i + 1]); i += 2 }
        if i + 1 < t.count, t[i].uppercased() == "OFFSET" { offset = Int(t[i + 1]) ?? 0; i += 2 }
        guard i == t.count else { return malformed("unexpected token: \(t[i])") }
        var rows = (order[type] ?? []).compactMap { records[type]?[$0] }.filter { o in conds.allSatisfy { Self.matches(o[$0.field], $0) } }
        if let sortField {
            rows.sort { a, b in
                let x = a[sortField]?.printed() ?? "", y = b[sortField]?.printed() ?? ""
                return descending ? x > y : x < y
            }
        }
        rows = Array(rows.dropFirst(offset))
        if let limit { rows = Array(rows.prefix(limit)) }
        if countOnly { return reply(200, .object(["totalSize": .int(Int64(rows.count)), "done": true, "records": []])) }
        let shaped = rows.map { wire(type, $0, only: fields).objectValue! }
        return page(shaped, from: 0, batch: batch, locator: nil)
    }

    static func matches(_ value: JSON?, _ c: Cond) -> Bool {
        let v = value ?? .null
        if c.value == .null { return c.op == "=" ? v.isNull : (c.op == "!=" ? !v.isNull : false) }
        let order: Int?
        switch (v, c.value) {
        case (.string(let a), .str(let b)): order = a.lowercased() == b.lowercased() ? 0 : (a.lowercased() < b.lowercased() ? -1 : 1)
        case (.string(let a), .dt(let b)): order = a == b ? 0 : (a < b ? -1 : 1)
        case (_, .num(let b)): order = v.doubleValue.map { $0 == b ? 0 : ($0 < b ? -1 : 1) }
        case (.bool(let a), .bool(let b)): order = a == b ? 0 : 1
        default: order = nil
        }
        guard let order else { return c.op == "!=" }
        switch c.op {
        case "=": return order == 0
        case "!=": return order != 0
        case "<": return order < 0
        case "<=": return order <= 0
        case ">": return order > 0
        default: return order >= 0
        }
    }

    func page(_ rows: [JSONObject], from start: Int, batch: Int, locator: String?) -> TransportResponse {
        let slice = Array(rows.dropFirst(start).prefix(batch))
        var o: JSONObject = ["totalSize": .int(Int64(rows.count)), "done": .bool(start + slice.count >= rows.count)]
        if start + slice.count < rows.count {
            let id = locator ?? "01gSIM\(locators.count + 1)"
            locators[id] = rows
            totals[id] = batch
            o["nextRecordsUrl"] = .string("/services/data/v62.0/query/\(id)-\(start + slice.count)")
        }
        o["records"] = .array(slice.map(JSON.object))
        return reply(200, .object(o))
    }

    func more(_ locator: String) -> TransportResponse {
        guard let dash = locator.lastIndex(of: "-"), let start = Int(locator[locator.index(after: dash)...]),
              let rows = locators[String(locator[..<dash])] else {
            return restError(400, "INVALID_QUERY_LOCATOR", "invalid query locator")
        }
        let id = String(locator[..<dash])
        return page(rows, from: start, batch: totals[id] ?? 2000, locator: id)
    }

    // MARK: Collections

    func collection(_ method: TransportRequest.Method, _ body: JSON?, query: [String: String]) -> TransportResponse {
        func item(_ id: String?, _ error: (String, String)?) -> JSON {
            var o: JSONObject = [:]
            if let id { o["id"] = .string(id) }
            o["success"] = .bool(error == nil)
            o["errors"] = .array(error.map { [.object(["statusCode": .string($0.0), "message": .string($0.1), "fields": []])] } ?? [])
            return .object(o)
        }
        if method == .delete {
            let ids = (query["ids"] ?? "").split(separator: ",").map(String.init)
            guard ids.count <= 200 else { return restError(400, "EXCEEDED_ID_LIMIT", "record limit reached. cannot submit more than 200 records into this call") }
            let allOrNone = query["allOrNone"] == "true"
            let bad = ids.firstIndex { id in !records.values.contains { $0[id] != nil } }
            if allOrNone, let bad {
                return reply(200, .array(ids.indices.map { i in
                    item(ids[i], i == bad ? ("ENTITY_IS_DELETED", "entity is deleted") : ("ALL_OR_NONE_OPERATION_ROLLED_BACK", "Record rolled back because not all records were valid and the request was using AllOrNone header"))
                }))
            }
            var out: [JSON] = []
            for id in ids {
                if let type = records.first(where: { $0.value[id] != nil })?.key { _ = remove(type, id); out.append(item(id, nil)) }
                else { out.append(item(id, ("ENTITY_IS_DELETED", "entity is deleted"))) }
            }
            return reply(200, .array(out))
        }
        guard let o = body?.objectValue, let items = o["records"]?.arrayValue else { return restError(400, "JSON_PARSER_ERROR", "no records") }
        guard items.count <= 200 else { return restError(400, "EXCEEDED_ID_LIMIT", "record limit reached. cannot submit more than 200 records into this call") }
        let allOrNone = o["allOrNone"]?.boolValue ?? false
        // Validate first (an unknown id on update, or a field named Bad__x, fails its item).
        var problems: [Int: (String, String)] = [:]
        for (i, r) in items.enumerated() {
            let ro = r.objectValue ?? [:]
            if ro.keys.contains("Bad__x") { problems[i] = ("INVALID_FIELD", "No such column 'Bad__x' on entity") }
            if method == .patch, let id = ro["Id"]?.stringValue, !records.values.contains(where: { $0[id] != nil }) {
                problems[i] = ("ENTITY_IS_DELETED", "entity is deleted")
            }
        }
        if allOrNone, !problems.isEmpty {
            return reply(200, .array(items.indices.map { i in
                item(nil, problems[i] ?? ("ALL_OR_NONE_OPERATION_ROLLED_BACK", "Record rolled back because not all records were valid and the request was using AllOrNone header"))
            }))
        }
        var out: [JSON] = []
        for (i, r) in items.enumerated() {
            if let p = problems[i] { out.append(item(nil, p)); continue }
            var ro = r.objectValue ?? [:]
            let type = ro["attributes"]?.objectValue?["type"]?.stringValue ?? ""
            ro["attributes"] = nil
            if method == .post {
                out.append(item(insert(type, ro), nil))
            } else {
                let id = ro["Id"]?.stringValue ?? ""
                ro["Id"] = nil
                _ = patch(type, id, .object(ro), ifUnmodifiedSince: nil)
                out.append(item(id, nil))
            }
        }
        return reply(200, .array(out))
    }

    func collectionRetrieve(_ type: String, _ body: JSON?) -> TransportResponse {
        guard let o = body?.objectValue, let ids = o["ids"]?.arrayValue?.compactMap(\.stringValue),
              let fields = o["fields"]?.arrayValue?.compactMap(\.stringValue) else {
            return restError(400, "JSON_PARSER_ERROR", "ids and fields are required")
        }
        return reply(200, .array(ids.map { id in records[type]?[id].map { wire(type, $0, only: fields) } ?? .null }))
    }
}
