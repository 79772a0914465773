import Foundation
import MBaaSCore
import Testing

@testable import MBaaSAppPot

/// The wire module both ways: routes build and parse to the same endpoint, and every query expression the
/// client writes is read back by the server side as a predicate with the same meaning.
@Suite("AppPot wire, both ways")
struct AppPotWireTests {
    static let app = AppPotAppPath(contextRoot: "apppot", companyId: "24", appId: "jp.co.example.App", appVersion: "1.0")

    @Test("each route's path parses back to the route; other apps and unknown paths are told apart")
    func routes() {
        let routes: [AppPotRoute] = [
            .anonymousTokens, .login, .logout, .devices, .schemas, .addData, .updateData, .deleteData,
            .object(className: "Memo", id: "Memo_1767225601000"), .query(className: "Memo"), .count(className: "Memo"),
            .legacyQuery, .files, .file("0000_a b/ü.txt"), .users, .user("20"), .groups, .group("12"), .roles, .logs,
            .messages, .emails, .gateway(["svc", "json", "x"]),
        ]
        for route in routes {
            let path = Self.app.path(route)
            #expect(path.hasPrefix("/apppot/api/24/jp.co.example.App/1.0/"))
            #expect(Self.app.parse(path) == .route(route), "\(path)")
            #expect(Self.app.parse(path + "/") == .route(route), "trailing slash: \(path)")
        }
        #expect(Self.app.path(.file("a b")).hasSuffix("/files/a%20b"))
        #expect(Self.app.parse("/apppot/api/25/jp.co.example.App/1.0/users") == .otherApp(companyId: "25", appId: "jp.co.example.App", appVersion: "1.0"))
        for unknown in ["/apppot/api/24/jp.co.example.App/1.0/nothing", "/other/api/24/a/1.0/users", "/apppot/api/24",
                        "/apppot/api/24/jp.co.example.App/1.0/data/batch/dropAll", "/apppot/api/24/jp.co.example.App/1.0//users"] {
            #expect(Self.app.parse(unknown) == .unknown, "\(unknown)")
        }
    }

    static let schema = AppPotClassSchema(name: "Q", columns: ["n": .long, "title": .varchar(255)])

    /// Records over every mix of absent and present values.
    static let records: [[String: Value]] = {
        var out: [[String: Value]] = []
        for n in [nil, 1, 2, 3] as [Int64?] {
            for t in [nil, "a", "ab", "b", "a%_"] as [String?] {
                var r: [String: Value] = ["id": .string("Q_\(out.count)")]
                if let n { r["n"] = .int(n) }
                if let t { r["title"] = .string(t) }
                out.append(r)
            }
        }
        return out
    }()

    @Test("query expressions the client writes are read back by the server with the same meaning")
    func queries() throws {
        let predicates: [QueryPredicate] = [
            .compare("n", .eq, 2), .compare("n", .ne, 2), .compare("n", .lt, 2), .compare("n", .lte, 2),
            .compare("n", .gt, 2), .compare("n", .gte, 2), .in("n", [1, 3]), .notIn("n", [1, 3]), .in("n", [1, .null]),
            .notIn("n", [2, .null]), .exists("title", true), .exists("title", false), .prefix("title", "a"),
            .prefix("title", "a%_"), .compare("title", .eq, "ab"), .compare("id", .eq, "Q_3"),
            .and([.compare("n", .gte, 2), .prefix("title", "a")]), .or([.compare("n", .eq, 1), .exists("title", false)]),
            .not(.compare("n", .lt, 2)), .not(.prefix("title", "a")), .not(.or([.compare("n", .eq, 1), .compare("title", .eq, "b")])),
            .not(.and([.in("n", [1, 2]), .exists("title", true)])),
        ]
        for p in predicates {
            let translated = try AppPotQueryTranslator.expression(p, alias: "Q", schema: Self.schema)
            for r in Self.records {
                let expected = Self.matches(p, r)
                let got: Bool
                switch translated {
                case .always: got = true
                case .never: got = false
                case .sql(let source, let params):
                    let back = try AppPotQueryTranslator.predicate(source: source, params: params, alias: "Q")
                    got = Self.matches(back, r)
                }
                #expect(got == expected, "\(p) on \(r): \(translated)")
            }
        }
        // What the server refuses: other wildcards, joins' aliases, unknown operators, unbalanced params.
        for (source, params) in [("#Q.title LIKE ?", ["a%b"]), ("#P.n = ?", ["1"]), ("#Q.n ~ ?", ["1"]), ("#Q.n = ?", [])] as [(String, [JSON])] {
            #expect(throws: MBaaSError.self, "\(source)") { _ = try AppPotQueryTranslator.predicate(source: source, params: params, alias: "Q") }
        }
        // SDK tolerance: lower-case keywords, bare columns, literals.
        let loose = try AppPotQueryTranslator.predicate(source: "n >= 2 and not (title like 'a%') or title is null", params: [], alias: "Q")
        #expect(Self.records.filter { Self.matches(loose, $0) }.count == Self.records.filter {
            ($0["n"]?.intValue).map { $0 >= 2 } == true && !(($0["title"]?.stringValue)?.hasPrefix("a") ?? true) || $0["title"] == nil
        }.count)
        #expect(try AppPotQueryTranslator.sort([.init(column: "#Q.serverUpdateTime", descending: true), .init(column: "objectId", descending: false)], alias: "Q")
                == [SortKey("updatedAt", ascending: false), SortKey("id")])
    }

    /// The neutral meaning: a comparison, `in` or prefix on an absent field is false; `ne`/`nin` on it true.
    static func matches(_ p: QueryPredicate, _ r: [String: Value]) -> Bool {
        func cmp(_ a: Value, _ b: Value) -> Int? {
            if let x = a.intValue, let y = b.intValue { return x < y ? -1 : (x == y ? 0 : 1) }
            if let x = a.stringValue, let y = b.stringValue { return x < y ? -1 : (x == y ? 0 : 1) }
            return nil
        }
        switch p {
        case .compare(let k, let c, let v):
            guard let a = r[k], let o = cmp(a, v) else { return c == .ne }
            switch c {
            case .eq: return o == 0
            case .ne: return o != 0
            case .lt: return o < 0
            case .lte: return o <= 0
            case .gt: return o > 0
            case .gte: return o >= 0
            }
        case .in(let k, let vs):
            guard let a = r[k] else { return vs.contains(.null) }
            return vs.contains { cmp(a, $0) == 0 }
        case .notIn(let k, let vs): return !matches(.in(k, vs), r)
        case .exists(let k, let present): return (r[k] != nil) == present
        case .prefix(let k, let s): return r[k]?.stringValue?.hasPrefix(s) ?? false
        case .and(let ps): return ps.allSatisfy { matches($0, r) }
        case .or(let ps): return ps.contains { matches($0, r) }
        case .not(let q): return !matches(q, r)
        case .regex, .containsAll: return false
        }
    }
}
