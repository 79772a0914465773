import Foundation

/// A backend address in the style of database URLs.
///
/// ```
/// scheme://user:secret@host:port/path?option=value     HTTPS
/// scheme+http://user:secret@127.0.0.1:8080/path         plain HTTP (local servers, emulators)
/// scheme:PATH   scheme:///absolute/path                 a file or directory (no host)
/// ```
/// User and secret are percent-decoded (`admin%40example.com` is `admin@example.com`). What they mean is the
/// adapter's: an application id and key, an e-mail and password. ``description`` never shows the secret.
///
/// Parsing accepts a URL without a host; whether one is needed is the adapter's to say
/// (``WireProfile/requiresHost``, checked by ``BackendRegistry/open(_:context:)``).
public struct BackendURL: Sendable, Hashable, CustomStringConvertible {
    /// The scheme without `+http`, lowercased.
    public var scheme: String
    /// `false` for `+http` URLs.
    public var isSecure: Bool
    public var user: String?
    public var secret: String?
    public var host: String?
    public var port: Int?
    /// The path, percent-decoded; for the opaque form (`scheme:PATH`) everything after the colon.
    public var path: String
    public var options: [String: String]

    public init(
        scheme: String, isSecure: Bool = true, user: String? = nil, secret: String? = nil, host: String? = nil,
        port: Int? = nil, path: String = "", options: [String: String] = [:]
    ) {
        self.scheme = scheme
        self.isSecure = isSecure
        self.user = user
        self.secret = secret
        self.host = host
        self.port = port
        self.path = path
        self.options = options
    }

    /// Parses a backend URL; errors say what part is wrong.
    public init(parsing text: String) throws(MBaaSError) {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
            throw MBaaSError(.invalidRequest, "backend URL '\(text)' has no scheme (e.g. scheme://KEY:SECRET@host or scheme:PATH)")
        }
        var scheme = text[..<colon].lowercased()
        guard scheme.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == "." }) else {
            throw MBaaSError(.invalidRequest, "backend URL scheme '\(scheme)' is not valid")
        }
        var secure = true
        if scheme.hasSuffix("+http") { scheme.removeLast(5); secure = false }
        else if scheme.hasSuffix("+https") { scheme.removeLast(6) }
        let rest = text[text.index(after: colon)...]
        if !rest.hasPrefix("//") {
            // Opaque form: scheme:PATH (the path may start with a colon: `scheme::memory:`)
            var path = String(rest)
            var options: [String: String] = [:]
            if let q = path.firstIndex(of: "?") {
                options = try BackendURL.parseOptions(String(path[path.index(after: q)...]))
                path = String(path[..<q])
            }
            guard !path.isEmpty else { throw MBaaSError(.invalidRequest, "backend URL '\(text)' has no path") }
            self.init(scheme: scheme, isSecure: secure, path: path.removingPercentEncoding ?? path, options: options)
            return
        }
        // scheme:///abs/path is a path URL with an empty host
        guard var components = URLComponents(string: "x" + "://" + rest.dropFirst(2)) else {
            throw MBaaSError(.invalidRequest, "backend URL '\(BackendURL.redact(text))' is not a valid URL")
        }
        components.scheme = nil
        var options: [String: String] = [:]
        for item in components.queryItems ?? [] { options[item.name] = item.value ?? "" }
        let host = components.percentEncodedHost.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding }
        self.init(
            scheme: scheme, isSecure: secure, user: components.percentEncodedUser?.removingPercentEncoding,
            secret: components.percentEncodedPassword?.removingPercentEncoding, host: host, port: components.port,
            path: components.path, options: options)
    }

    private static func parseOptions(_ query: String) throws(MBaaSError) -> [String: String] {
        var options: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
            options[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return options
    }

    /// `http` or `https` base URL of the server: `https://host:port`.
    public var httpBase: String {
        var s = (isSecure ? "https" : "http") + "://" + (host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "")
        if let port { s += ":\(port)" }
        return s
    }

    /// The URL with the secret replaced by `***`.
    public var description: String {
        if host == nil && user == nil {
            return scheme + ":" + path + (options.isEmpty ? "" : "?" + optionString)
        }
        var s = scheme + (isSecure ? "" : "+http") + "://"
        if let user { s += (user.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed) ?? user) + (secret == nil ? "" : ":***") + "@" }
        s += host ?? ""
        if let port { s += ":\(port)" }
        s += path
        if !options.isEmpty { s += "?" + optionString }
        return s
    }

    private var optionString: String {
        options.keys.sorted().map { "\($0)=\(Self.isSecretOption($0) ? "***" : options[$0]!)" }.joined(separator: "&")
    }

    /// Option names whose values are secrets (compared without case): `password=` (Salesforce's password grant),
    /// `masterKey=`, `securityToken=`, and every name ``HTTPLogging/secretQueryNames`` lists. Printed as `***`.
    public static let secretOptionNames: Set<String> = HTTPLogging.secretQueryNames
        .union(["masterkey", "securitytoken", "clientsecret", "restkey"])

    /// Whether an option's value is a secret (``secretOptionNames``).
    public static func isSecretOption(_ name: String) -> Bool { secretOptionNames.contains(name.lowercased()) }

    /// Removes the secrets from a URL-looking string, for reports and messages: a `user:secret@` secret, and the
    /// value of every secret option (`?username=u&password=***`).
    public static func redact(_ text: String) -> String {
        let withoutUserSecret = redactingUserSecret(text)
        guard let question = withoutUserSecret.firstIndex(of: "?") else { return withoutUserSecret }
        let query = withoutUserSecret[withoutUserSecret.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).map { item -> String in
            guard let equals = item.firstIndex(of: "=") else { return String(item) }
            let name = String(item[..<equals])
            return isSecretOption(name.removingPercentEncoding ?? name) ? name + "=***" : String(item)
        }
        return String(withoutUserSecret[...question]) + query.joined(separator: "&")
    }

    /// Removes only a `user:secret@` secret. Kept for the migration's default state folder, whose name hashes URLs
    /// redacted this way: a folder made by an earlier version must still be found (``redact(_:)`` for display).
    public static func redactingUserSecret(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@"), let slashes = text.range(of: "://"),
              slashes.upperBound < at, let colon = text[slashes.upperBound..<at].firstIndex(of: ":")
        else { return text }
        return String(text[..<text.index(after: colon)]) + "***" + String(text[at...])
    }

    /// An option, or a default.
    public func option(_ name: String) -> String? { options[name] }

    /// Refuses an option the adapter does not read, naming it and the known ones (``MBaaSError/Kind/invalidRequest``):
    /// a misspelt option would otherwise be ignored in silence (`?masterkey=` would run without the master key).
    /// Adapters call this with every option they read; `known` may be empty (no options at all).
    public func requireKnownOptions(_ known: Set<String>, adapter: String) throws(MBaaSError) {
        guard let unknown = options.keys.sorted().first(where: { !known.contains($0) }) else { return }
        let list = known.isEmpty ? "it takes none" : "known: " + known.sorted().joined(separator: ", ")
        throw MBaaSError(.invalidRequest, "unknown \(adapter) URL option '\(unknown)' (\(list))")
    }

    /// The `timeout` option, the seconds each HTTP request may take (`?timeout=120`): `nil` when absent (the
    /// transport's default applies); a value that is not a positive number is ``MBaaSError/Kind/invalidRequest``.
    public func timeoutOption() throws(MBaaSError) -> Double? {
        guard let v = option("timeout") else { return nil }
        guard let t = Double(v), t > 0, t.isFinite else {
            throw MBaaSError(.invalidRequest, "URL option timeout must be a positive number of seconds, got '\(v)'")
        }
        return t
    }
}
