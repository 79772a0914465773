/// What an adapter's wire protocol looks like to tools that record, scrub and replay its HTTP traffic, and which
/// URL form it opens: the vendor knowledge those tools need, declared by the adapter (``BackendFactory/wireProfile``)
/// instead of listed in neutral code.
///
/// # Contract
/// - A profile is **complete**: tools use it as it is and add nothing of their own. An adapter builds its profile
///   from ``generic`` with ``merging(_:)`` (so it keeps the standard HTTP names) and adds its own names; it may also
///   remove generic names it knows to be harmless on its wire.
/// - Header names are compared case-insensitively (``isSecretHeader(_:)``, ``isVolatileHeader(_:)``,
///   ``isCapturedByPrefix(_:)``); field names (``tokenFields``, ``secretFields``) too. The sets keep the spelling
///   they are given.
/// - ``generic`` names only standard HTTP headers and widespread field names; it never names a vendor.
/// - How the names are used:
///   - ``secretHeaders``: values are credentials. A recorder replaces them by placeholders before anything is
///     written (a header whose name mentions a token or session learns a numbered token placeholder, any other one
///     a placeholder named after the header).
///   - ``volatileHeaders``: change on every request or every client (clocks, signatures over a clock, SDK versions,
///     request ids, transport framing). A recorder does not capture them and replay matching ignores them, unless a
///     recording pins one.
///   - ``tokenFields``: JSON keys, query and form parameter names whose string values are session or access tokens.
///   - ``secretFields``: JSON keys, query and form parameter names whose string values are passwords or other
///     secrets.
///   - ``capturedHeaderPrefixes``: lowercased prefixes of protocol headers a recorder keeps besides the standard
///     ones and `X-…` (a vendor whose headers carry no `X-` prefix names its own).
///   - ``requiresHost``: whether the adapter's URLs must name a host (`scheme://user:secret@HOST`). An adapter that
///     opens a file or a directory (`scheme:PATH`, `scheme:///ABSOLUTE/PATH`) sets it to `false`.
///     ``BackendRegistry/open(_:context:)`` refuses a URL without a host when it is `true`.
public struct WireProfile: Sendable, Hashable {
    public var secretHeaders: Set<String>
    public var volatileHeaders: Set<String>
    public var tokenFields: Set<String>
    public var secretFields: Set<String>
    public var capturedHeaderPrefixes: Set<String>
    public var requiresHost: Bool

    public init(
        secretHeaders: Set<String> = [], volatileHeaders: Set<String> = [], tokenFields: Set<String> = [],
        secretFields: Set<String> = [], capturedHeaderPrefixes: Set<String> = [], requiresHost: Bool = true
    ) {
        self.secretHeaders = secretHeaders
        self.volatileHeaders = volatileHeaders
        self.tokenFields = tokenFields
        self.secretFields = secretFields
        self.capturedHeaderPrefixes = Set(capturedHeaderPrefixes.map { $0.lowercased() })
        self.requiresHost = requiresHost
    }

    /// Standard HTTP names only: the profile of an adapter that declares none, and the base every adapter's profile
    /// is built on.
    public static let generic = WireProfile(
        // Standard credentials, and the conventional API-key and token headers of plain HTTP APIs.
        secretHeaders: ["Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-API-Key", "X-Auth-Token",
                        "X-Access-Token"],
        // Clocks, clients, transport framing, tracing and idempotency ids.
        volatileHeaders: ["Date", "User-Agent", "Content-Length", "Host", "Connection", "Accept-Encoding",
                          "Transfer-Encoding", "Expect", "Keep-Alive", "X-Request-Id", "X-Amzn-Trace-Id",
                          "Idempotency-Key", "X-Idempotency-Key"],
        // OAuth 2 / OpenID Connect names and their common camel-case spellings.
        tokenFields: ["sessionToken", "token", "access_token", "accessToken", "refresh_token", "refreshToken",
                      "authToken", "id_token", "idToken", "userToken", "_accessToken", "session_token"],
        // A bare `secret` is not among them: it is an ordinary record field name (the conformance suite stores
        // one), and scrubbing it would make recorded data unreplayable. An adapter that uses it for credentials
        // adds it.
        secretFields: ["password", "newPassword", "oldPassword", "currentPassword", "passwordConfirm", "client_secret",
                       "clientSecret", "masterKey", "apiKey", "appKey"],
        capturedHeaderPrefixes: [],
        requiresHost: true)

    /// This profile with `other`'s names added to each set; ``requiresHost`` is `other`'s (so
    /// `WireProfile.generic.merging(WireProfile(requiresHost: false))` drops the host requirement, and merging a
    /// profile that leaves it at its default `true` keeps it).
    public func merging(_ other: WireProfile) -> WireProfile {
        WireProfile(
            secretHeaders: secretHeaders.union(other.secretHeaders),
            volatileHeaders: volatileHeaders.union(other.volatileHeaders),
            tokenFields: tokenFields.union(other.tokenFields),
            secretFields: secretFields.union(other.secretFields),
            capturedHeaderPrefixes: capturedHeaderPrefixes.union(other.capturedHeaderPrefixes),
            requiresHost: other.requiresHost)
    }

    /// Whether the header's value is a credential (case-insensitive).
    public func isSecretHeader(_ name: String) -> Bool { Self.contains(secretHeaders, name) }

    /// Whether the header changes on every request or client (case-insensitive).
    public func isVolatileHeader(_ name: String) -> Bool { Self.contains(volatileHeaders, name) }

    /// Whether the header starts with one of ``capturedHeaderPrefixes`` (case-insensitive).
    public func isCapturedByPrefix(_ name: String) -> Bool {
        let lower = name.lowercased()
        return capturedHeaderPrefixes.contains { lower.hasPrefix($0) }
    }

    /// Whether the JSON key or parameter name holds a session token (case-insensitive).
    public func isTokenField(_ name: String) -> Bool { Self.contains(tokenFields, name) }

    /// Whether the JSON key or parameter name holds a password or other secret (case-insensitive).
    public func isSecretField(_ name: String) -> Bool { Self.contains(secretFields, name) }

    private static func contains(_ names: Set<String>, _ name: String) -> Bool {
        if names.contains(name) { return true }
        let lower = name.lowercased()
        return names.contains { $0.lowercased() == lower }
    }
}
