public import Foundation
public import MBaaSCore
@_exported import MBaaSNCMBWire

/// Where and how to reach an NCMB application.
///
/// From a URL: `ncmb://APPLICATION_KEY:CLIENT_KEY@mbaas.api.nifcloud.com` (HTTPS), or
/// `ncmb+http://APPLICATION_KEY:CLIENT_KEY@127.0.0.1:8080` for a local server. Options:
/// - `apiVersion` (default `2013-09-01`);
/// - `scriptHost` (default `script.mbaas.api.nifcloud.com`; `host:port` allowed) and `scriptAPIVersion`
///   (default `2015-09-01`) for ``NCMBBackend/executeScript(_:method:query:body:)``;
/// - `verifyResponseSignature=true` to check `X-NCMB-Response-Signature` on successful responses that carry it
///   (E100001 on a mismatch), for apps with response validation enabled (see ``NCMBSigner/verifyResponse(_:stringToSign:)``);
/// - `currentUserRoles=false` to skip finding the user's roles in ``NCMBBackend/currentUser()`` (one query for the
///   roles plus one `$relatedTo` query per role; ``User/roles`` is then empty).
public struct NCMBConfiguration: Sendable, Hashable {
    public static let defaultHost = "mbaas.api.nifcloud.com"
    public static let defaultAPIVersion = "2013-09-01"
    public static let defaultScriptHost = "script.mbaas.api.nifcloud.com"
    public static let defaultScriptAPIVersion = "2015-09-01"

    public var applicationKey: String
    public var clientKey: String
    public var host: String
    public var port: Int?
    public var isSecure: Bool
    public var apiVersion: String
    public var scriptHost: String
    public var scriptPort: Int?
    public var scriptAPIVersion: String
    public var verifyResponseSignature: Bool
    /// Whether ``NCMBBackend/currentUser()`` finds the user's roles (default `true`; URL option `currentUserRoles`).
    public var currentUserRoles: Bool = true
    /// Seconds before a request fails (files get four times as long).
    public var timeout: TimeInterval

    public init(
        applicationKey: String, clientKey: String, host: String = NCMBConfiguration.defaultHost, port: Int? = nil,
        isSecure: Bool = true, apiVersion: String = NCMBConfiguration.defaultAPIVersion,
        scriptHost: String = NCMBConfiguration.defaultScriptHost, scriptPort: Int? = nil,
        scriptAPIVersion: String = NCMBConfiguration.defaultScriptAPIVersion, verifyResponseSignature: Bool = false,
        timeout: TimeInterval = 30
    ) {
        self.applicationKey = applicationKey
        self.clientKey = clientKey
        self.host = host
        self.port = port
        self.isSecure = isSecure
        self.apiVersion = apiVersion
        self.scriptHost = scriptHost
        self.scriptPort = scriptPort
        self.scriptAPIVersion = scriptAPIVersion
        self.verifyResponseSignature = verifyResponseSignature
        self.timeout = timeout
    }

    /// Reads an `ncmb://` or `ncmb+http://` URL; a missing key or host is ``MBaaSError/Kind/invalidRequest``.
    public init(url: BackendURL) throws(MBaaSError) {
        guard let appKey = url.user, !appKey.isEmpty, let clientKey = url.secret, !clientKey.isEmpty else {
            throw MBaaSError(.invalidRequest, "an NCMB URL needs the application key and client key: ncmb://APPLICATION_KEY:CLIENT_KEY@\(NCMBConfiguration.defaultHost)")
        }
        guard let host = url.host, !host.isEmpty else {
            throw MBaaSError(.invalidRequest, "an NCMB URL needs a host, e.g. \(NCMBConfiguration.defaultHost)")
        }
        try url.requireKnownOptions(Self.knownOptions, adapter: "NCMB")
        self.init(applicationKey: appKey, clientKey: clientKey, host: host, port: url.port, isSecure: url.isSecure)
        if let v = url.option("apiVersion"), !v.isEmpty { apiVersion = v }
        if let v = url.option("scriptAPIVersion"), !v.isEmpty { scriptAPIVersion = v }
        if let v = url.option("scriptHost"), !v.isEmpty {
            if let colon = v.lastIndex(of: ":"), let p = Int(v[v.index(after: colon)...]) {
                scriptHost = String(v[..<colon])
                scriptPort = p
            } else {
                scriptHost = v
            }
        }
        if let v = url.option("verifyResponseSignature") {
            switch v.lowercased() {
            case "", "1", "true", "yes", "on": verifyResponseSignature = true
            case "0", "false", "no", "off": verifyResponseSignature = false
            default: throw MBaaSError(.invalidRequest, "verifyResponseSignature must be true or false, got '\(v)'")
            }
        }
        if let v = url.option("currentUserRoles") {
            switch v.lowercased() {
            case "", "1", "true", "yes", "on": currentUserRoles = true
            case "0", "false", "no", "off": currentUserRoles = false
            default: throw MBaaSError(.invalidRequest, "currentUserRoles must be true or false, got '\(v)'")
            }
        }
        if let t = try url.timeoutOption() { timeout = t }
    }

    /// The URL options an `ncmb://` URL may carry; any other is refused.
    public static let knownOptions: Set<String> = ["apiVersion", "scriptAPIVersion", "scriptHost", "verifyResponseSignature", "currentUserRoles", "timeout"]

    /// `https://host[:port]`
    public var baseURL: String { Self.base(isSecure: isSecure, host: host, port: port) }
    /// `https://scriptHost[:port]`
    public var scriptBaseURL: String { Self.base(isSecure: isSecure, host: scriptHost, port: scriptPort) }

    static func base(isSecure: Bool, host: String, port: Int?) -> String {
        (isSecure ? "https://" : "http://") + (host.contains(":") ? "[\(host)]" : host) + (port.map { ":\($0)" } ?? "")
    }

    public var signer: NCMBSigner { NCMBSigner(applicationKey: applicationKey, clientKey: clientKey) }
}

/// Opens ``NCMBBackend``s from `ncmb://` URLs.
public struct NCMBBackendFactory: BackendFactory {
    public init() {}
    public var schemes: [String] { ["ncmb"] }
    public var adapterName: String { "ncmb" }
    /// ``WireProfile/ncmb``: the signed `X-NCMB-…` headers.
    public var wireProfile: WireProfile { .ncmb }
    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        NCMBBackend(configuration: try NCMBConfiguration(url: url), context: context)
    }
}

/// A client of one NCMB application: objects on `/classes`, the built-in classes, the file store, users, roles
/// and scripts, every request signed (SignatureVersion 2).
///
/// Each instance holds its own session (`X-NCMB-Apps-Session-Token`); a response `E401001` to a request that
/// carried the session ends it. See ``NCMBClassName`` for the built-in class mapping, ``NCMBCodec`` for values,
/// ``NCMBQueryTranslator`` for queries and ``capabilities`` for what NCMB cannot do.
public actor NCMBBackend: Backend, ParseFamilyClient {
    public typealias Vendor = NCMBWire

    public nonisolated let adapterName = "ncmb"
    public nonisolated let configuration: NCMBConfiguration
    public nonisolated let context: BackendContext
    public nonisolated let capabilities: Capabilities = NCMBBackend.capabilities

    var currentSession: Session?

    /// The core's HTTP client for this application (made once: its base URL and error decoder do not change).
    nonisolated let http: HTTPAdapterClient
    /// The request signer (made once: it holds the client key's HMAC state).
    nonisolated let signer: NCMBSigner

    public init(configuration: NCMBConfiguration, context: BackendContext = BackendContext()) {
        self.configuration = configuration
        self.context = context
        self.http = Self.httpClient(configuration, context)
        self.signer = configuration.signer
    }

    /// What NCMB can do, with the reason for each thing it cannot (``NCMBWire/capabilities``, shared with the
    /// emulator's NCMB dialect).
    public static let capabilities = NCMBWire.capabilities

    /// The feature a scenario needing non-ASCII file names would require. Not declared: ``upload(_:)`` refuses
    /// such names.
    public static let unicodeFileNames: Capabilities.Feature = .unicodeFileNames
    static let unicodeFileNamesNote = NCMBWire.unicodeFileNamesNote

    // MARK: Session

    public var session: Session? { currentSession }

    public func restore(_ session: Session?) { currentSession = session }

    // MARK: Requests

    /// A request body (the core's ``HTTPRequestBody``).
    typealias Body = HTTPRequestBody

    /// The core's HTTP client for this application: NCMB's error decoder, and `Content-Type: application/json` on
    /// every request. Every vendor client sends it, GET and DELETE included: [sdk] ncmb_swift NCMBRequest.swift,
    /// ncmb_android NCMBRequest.java, ncmb_js lib/request.js; [doc] rest/common/query.html (its curl GET sends it).
    /// E415001 is NCMB's "unsupported Content-Type".
    static func httpClient(_ configuration: NCMBConfiguration, _ context: BackendContext) -> HTTPAdapterClient {
        HTTPAdapterClient(name: "ncmb", displayName: "NCMB", baseURL: configuration.baseURL, timeout: configuration.timeout,
                          context: context, contentTypeWithoutBody: "application/json") { response, now, what in
            NCMBErrorBody.error(from: response, now: now, context: what)
        }
    }

    /// Sends a signed request to the data API and returns the 2xx response, or throws the mapped NCMB error.
    /// - Parameter path: the percent-encoded path after the API version (`/classes/Memo/abc`).
    func send(
        _ method: TransportRequest.Method, _ path: String, query: [(String, String)] = [], body: Body = .none,
        useSession: Bool = true, token explicitToken: String? = nil, timeout: TimeInterval? = nil,
        context what: String? = nil
    ) async throws(MBaaSError) -> TransportResponse {
        try await sendSigned(method, base: http.baseURL, path: "/\(configuration.apiVersion)\(path)",
                             query: query, body: body, useSession: useSession, token: explicitToken, timeout: timeout,
                             context: what)
    }

    /// Builds the request with the core's client, adds the session and the signature (SignatureVersion 2), sends
    /// it, verifies the response signature when configured, and ends the session on `E401001`.
    func sendSigned(
        _ method: TransportRequest.Method, base: String, path: String, query: [(String, String)], body: Body, useSession: Bool,
        token explicitToken: String? = nil, headers extra: HTTPFields = [:], timeout: TimeInterval?,
        context what: String?
    ) async throws(MBaaSError) -> TransportResponse {
        let http = self.http
        var request = try http.request(method, path, query: query, body: body, base: base, timeout: timeout)
        request.headers.append(contentsOf: extra)
        let token = explicitToken ?? (useSession ? currentSession?.token : nil)
        if let token { request.headers[NCMBSigner.Field.sessionToken] = token }
        let stringToSign = try signer.sign(&request, timestamp: ISO8601.format(context.now))
        let response: TransportResponse
        do {
            response = try await http.send(request, path: path, context: what)
        } catch {
            if error.vendorCode == "E401001", let token, currentSession?.token == token {
                // The session token was refused: the session has ended.
                currentSession = nil
                context.logger.info("ncmb session ended by the server (E401001)")
            }
            throw error
        }
        // Successful responses only, as ncmb_unity (`req.error == null`) and ncmb_js (request.js rejects before
        // validating) check them; a response without the header is not checked (NCMBSigner.verifyResponse).
        if configuration.verifyResponseSignature {
            try signer.verifyResponse(response, stringToSign: stringToSign)
        }
        return response
    }

    /// The response body as JSON, or a decoding error.
    func json(_ response: TransportResponse) throws(MBaaSError) -> JSON { try http.json(response) }

    /// `/classes/Memo/abc`, `/users/abc`, …
    func objectPath(_ cls: NCMBClassName, _ id: String) -> String { cls.collectionPath + "/" + percentEncode(id) }
}
