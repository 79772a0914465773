import Foundation
public import MBaaSCore

/// The generation of the AppPot server API a client speaks, chosen with the backend URL option
/// `generation=v2|v3|v4` (default `v2`; `auto` detects what the server makes detectable, see below).
///
/// The vendor's JS SDK keeps one branch per server generation (`ncdcdev/apppot-sdk-js` branches `v2.3`, `v3`,
/// `v4`); the wire rules that differ between them are all here:
///
/// | rule | v2 | v3 | v4 |
/// |---|---|---|---|
/// | `range.offset` of a query | 1-based (skip 10 is `11`) | 0-based (skip 10 is `10`) | 0-based |
/// | anonymous token | `GET anonymousTokens?appKey&deviceUDID`, token in `results` | as v2 | `POST anonymousTokens {"appKey"}`, token in `authInfo.userTokens` |
/// | login body | `{username,password,appId,deviceUDID,isPush,appVersion,companyId}` with the anonymous token | as v2 | `{account,password,appKey}`, no token |
/// | column types | `varchar`, `integer`, `long` | also `datetime`, `double`, `text`, `float`, `decimal` | as v3 |
/// | double values | text, JS-style (`"5"`, `"5.5"`) in a varchar(255) column | JSON numbers in a `double` column | as v3 |
///
/// Detection (`generation=auto`): only v4 can be told from the server's answers — it has no
/// `GET anonymousTokens` (the request is answered "not found"), so the client then posts the v4 request and
/// speaks v4. v2 and v3 answer every request alike and differ only in how `range.offset` counts, which no answer
/// reveals, so `auto` without v4 means v2; give `generation=v3` for a v3 server.
public enum AppPotGeneration: String, Sendable, Hashable, CaseIterable {
    case v2
    case v3
    case v4

    /// Reads `v2`, `2`, `v2.3`, `V3`...
    public init?(option: String) {
        let s = option.lowercased().trimmingCharacters(in: .whitespaces)
        let digits = s.hasPrefix("v") ? String(s.dropFirst()) : s
        switch digits.split(separator: ".").first.map(String.init) {
        case "2": self = .v2
        case "3": self = .v3
        case "4": self = .v4
        default: return nil
        }
    }

    /// `range.offset` for `skip` rows skipped: v2 counts from 1 (JS v2.3 `limit(n, offset)` sends `offset+1`),
    /// v3 and v4 from 0 (JS v3/v4 send `offset`).
    public func rangeOffset(skip: Int) -> Int { self == .v2 ? skip + 1 : skip }

    /// The rows skipped for a `range.offset` (inverse of ``rangeOffset(skip:)``; below the first row counts as 0).
    public func skip(rangeOffset offset: Int) -> Int { Swift.max(0, self == .v2 ? offset - 1 : offset) }

    /// Whether the server knows the v3 column types (`datetime`, `double`, `text`, `float`, `decimal`).
    public var hasTypedColumns: Bool { self != .v2 }

    /// Whether the anonymous token is requested with `POST anonymousTokens` (v4) rather than `GET` (v2, v3).
    public var postsAnonymousToken: Bool { self == .v4 }

    /// Whether login sends `{account,password,appKey}` without a token (v4) rather than the v2 body with the
    /// anonymous token.
    public var accountLogin: Bool { self == .v4 }
}

/// The anonymous token requests and answers of each generation.
public enum AppPotAnonymousTokenCodec {
    /// The v4 body of `POST anonymousTokens`: `{"appKey":..}`, plus `account` to get the token of an anonymous
    /// user already issued (JS v4 `getAnonymousToken(account?)`).
    public static func v4Body(appKey: String, account: String? = nil) -> JSON {
        var o: JSONObject = ["appKey": .string(appKey)]
        if let account { o["account"] = .string(account) }
        return .object(o)
    }

    /// The token of an answer: `results` (v2, v3: a string) or `authInfo.userTokens` (v4; `authInfor` accepted).
    public static func token(_ json: JSON?) throws(MBaaSError) -> String {
        if let t = json?["results"]?.stringValue, !t.isEmpty { return t }
        if let info = json?["authInfo"] ?? json?["authInfor"], let t = info["userTokens"]?.stringValue, !t.isEmpty {
            return t
        }
        throw MBaaSError(.decoding, "AppPot anonymousTokens response has no token ('results' or 'authInfo.userTokens')")
    }
}

/// The v4 body of `POST auth/login`: `{"account","password","appKey"}` (JS v4 `local-authenticator.ts`).
public struct AppPotAccountLoginRequest: Sendable, Hashable {
    public var account: String
    public var password: String
    public var appKey: String

    public init(account: String, password: String, appKey: String) {
        self.account = account
        self.password = password
        self.appKey = appKey
    }

    public var json: JSON {
        .object(["account": .string(account), "password": .string(password), "appKey": .string(appKey)])
    }
}

/// Numbers as the JS SDK prints them (`columns[key] + ""`): `5`, `5.5`, `-0.25`, `1e+21`, `1e-7`.
public enum AppPotNumberText {
    public static func js(_ d: Double) -> String {
        if d == 0 { return "0" }
        if d.rounded() == d, abs(d) < 1e21 {
            if abs(d) < 9.0e18 { return String(Int64(d)) }
            return String(format: "%.0f", d)
        }
        var s = "\(d)"
        // Swift writes exponents as `e-07`/`e+21`; JS as `e-7`/`e+21`.
        if let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            var mantissa = String(s[..<e])
            if mantissa.hasSuffix(".0") { mantissa.removeLast(2) }
            var exp = String(s[s.index(after: e)...])
            var sign = "+"
            if exp.hasPrefix("-") || exp.hasPrefix("+") { sign = String(exp.removeFirst()) }
            while exp.count > 1, exp.hasPrefix("0") { exp.removeFirst() }
            if sign == "-", let n = Int(exp), abs(d) >= 1e-6 {
                // JS writes 1e-6 <= |d| < 1 positionally: 0.00001.
                let negative = mantissa.hasPrefix("-")
                let digits = mantissa.filter(\.isNumber)
                s = (negative ? "-" : "") + "0." + String(repeating: "0", count: n - 1) + digits
            } else {
                s = mantissa + "e" + sign + exp
            }
        }
        return s
    }
}
