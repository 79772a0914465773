import Foundation
import MBaaSCore
import MBaaSReplay

/// How AppPot cassettes are authored: the scrubber, and the documented facts (sections of part A of
/// /work/shared/reference/apppot-salesforce.md) each exchange follows.
enum AppPotCassettes {
    static let reference = "apppot-salesforce.md"

    /// The default scrubber plus AppPot's token members: `userTokens` (the login's user token, A5) and the
    /// string `results` of `anonymousTokens` (A5).
    static func scrubber(appKey: String) -> Scrubber {
        Scrubber(secrets: [(placeholder: "APP_KEY", value: appKey)],
                 tokenKeys: Scrubber.defaultTokenKeys.union(["userTokens", "results"]))
    }

    /// The fact an exchange follows, from its method, path and response.
    static func fact(for interaction: Interaction) -> String {
        let r = interaction.request
        let segments = r.path.split(separator: "/").map(String.init)
        let tail = segments.firstIndex(of: "api").map { Array(segments.dropFirst($0 + 4)) } ?? segments
        let status = interaction.response.status
        let code: Int? = {
            if case .json(let j) = interaction.response.body { return j["errCode"]?.intValue.map { Int($0) } }
            return nil
        }()
        let error = code.map { $0 != 0 } ?? false
        let suffix = error ? " (errCode \(code!): \(codeMeaning(code!)))" : ""
        switch (r.method, tail.first ?? "", tail.count) {
        case ("GET", "anonymousTokens", _): return "\(reference) A5 GET anonymousTokens?appKey&deviceUDID returns the token in results" + suffix
        case ("POST", "auth", _) where tail.last == "login":
            return "\(reference) A5 POST auth/login with the anonymous token; answer under authInfor (userTokens, validTime, userId, userInfo, groupsAndRoles)" + suffix
        case ("POST", "auth", _): return "\(reference) A5 POST auth/logout {} with apppot-token; later calls fail with 121" + suffix
        case ("GET", "users", _): return "\(reference) A10 GET users/{id} gives {user} (member shape assumed: POST users fields plus userId)" + suffix
        case ("POST", "schemas", _): return "\(reference) A6 POST schemas {appId, appVersion, companyId, isResetDatabase, tables[primary_key objectId, columns varchar/integer/long]}" + suffix
        case ("POST", "data", _) where tail.count == 3 && tail[1] == "batch":
            return "\(reference) A7 POST data/batch/\(tail[2]) {objectName, transactionId?, \(tail[2] == "deleteData" ? "objectIds[{objectId, serverUpdateTime}]" : "data[rows]")}; results per row in request order" + suffix
        case ("GET", "data", _):
            return status == 404 ? "\(reference) A7 GET data/{Class}/{id} for a missing record (assumed: HTTP 404, errCode 130)"
                : "\(reference) A7 GET data/{Class}/{id} answers {Class:[row]} with every value as a string" + suffix
        case ("POST", "data", _) where tail.last == "count":
            return status == 404 ? "\(reference) A4/A8 data/query/{Class}/count: nothing matched answers HTTP 404"
                : "\(reference) A7 POST data/query/{Class}/count (answer shape assumed: results N)" + suffix
        case ("POST", "data", _):
            return status == 404 ? "\(reference) A4/A8 POST data/query/{Class}: nothing matched answers HTTP 404 (an empty result)"
                : "\(reference) A8 POST data/query/{Class} {from, where.expression{source #Alias.col and ?, params}, orderBy, range offset 1-based}; rows under the alias as strings" + suffix
        case ("POST", "files", _), ("PUT", "files", _):
            return "\(reference) A9 \(r.method) files multipart entity {name} + file; the stored name has a UUID prefix" + suffix
        case ("GET", "files", _): return "\(reference) A9 GET files/{name}?userToken= answers the bytes (application/octet-stream)" + suffix
        case ("DELETE", "files", _): return "\(reference) A9 DELETE files/{name}" + suffix
        case ("POST", "logs", _): return "\(reference) A10 POST logs {message, logLevel MONITOR|ERROR}" + suffix
        case ("POST", "devices", _): return "\(reference) A5 POST devices; an already registered UDID answers 161" + suffix
        default: return "\(reference) A3 \(r.method) \(tail.joined(separator: "/"))" + suffix
        }
    }

    static func codeMeaning(_ code: Int) -> String {
        [101: "app does not exist", 110: "user does not exist", 111: "wrong user name or password", 112: "user/token mismatch (assumed for the anonymous token on data calls)",
         120: "token expired", 121: "token does not exist", 130: "record does not exist or data blocking",
         161: "device already registered", 211: "transaction id already used", 600: "file error (assumed for a missing file)",
         993: "table empty or does not exist", 995: "table empty or does not exist"][code] ?? "A4 table"
    }

    /// The reference sections a cassette follows, in order of first use.
    static func facts(of cassette: Cassette) -> [String] {
        var out = ["\(reference) A3 base URL /{contextRoot}/api/{companyId}/{appId}/{appVersion}/",
                   "\(reference) A4 envelope {status, errCode, description, results}; errors {status:error, errCode, description}"]
        for i in cassette.interactions {
            let f = fact(for: i)
            let section = String(f.dropFirst(reference.count + 1).prefix { $0 != " " })
            let line = "\(reference) \(section)"
            if !out.contains(where: { $0.hasPrefix(line + " ") || $0 == line }) { out.append(line + " " + Self.sectionTitles[section, default: ""]) }
        }
        return out.map { $0.trimmingCharacters(in: .whitespaces) }
    }

    static let sectionTitles: [String: String] = [
        "A5": "authentication: anonymous token, login, apppot-token header, logout",
        "A6": "schemas: tables must exist before data; varchar/integer/long; bool varchar(1), datetime long ms, double varchar(255)",
        "A7": "data CRUD: batch writes with per-row results, values read back as strings, serverUpdateTime is the lock token (130 when stale), scopeType 1/2/3",
        "A8": "query JSON: #Alias.column, positional ?, AND/OR parenthesised, IN as an OR chain, 1-based range.offset",
        "A4/A8": "a query that matches nothing answers HTTP 404",
        "A9": "files: multipart entity+file, UUID-prefixed stored name, GET with ?userToken",
        "A10": "logs, users",
    ]

    /// The cassette with per-interaction facts and the provenance of an authored AppPot cassette.
    static func annotate(_ cassette: Cassette) -> Cassette {
        var c = cassette
        for i in c.interactions.indices { c.interactions[i].fact = fact(for: c.interactions[i]) }
        c.provenance = Provenance(
            kind: .authored, server: "AppPot (documented behaviour simulator)", facts: facts(of: c),
            notes: "Authored by running the scenario through Tests/MBaaSAppPotTests/AppPotSimulator.swift, which implements the documented AppPot v2 REST behaviour (reference part A) independently of the adapter's codec; choices the reference leaves open are marked 'assumed' in the facts.")
        return c
    }
}
