import Foundation
public import MBaaSCore
@_exported import MBaaSKiiWire

/// A Kii Cloud app as a ``Backend``: JSON objects in buckets of the app, a user, a group or a thing; clause
/// queries; one body per object; ETag versions; users with OAuth-style tokens.
///
/// Open one from a URL with ``KiiBackendFactory`` (`kii://APP_ID:APP_KEY@api-jp.kii.com`, see
/// ``KiiConfiguration``) or with ``init(configuration:context:)``. Class names address buckets and scopes as
/// described on ``KiiBucketAddress``; values map as described on ``KiiObjectCodec``; queries as on
/// ``KiiClauseTranslator``. What Kii cannot do is listed in ``capabilities`` with the reason and thrown as
/// ``MBaaSError/Kind/unsupported``.
///
/// Every request goes through the context's transport; the wire format lives in the pure codec types
/// (``KiiRequestBuilder``, ``KiiClause``, ``KiiObjectCodec``...), which a server can reuse.
public actor KiiBackend: Backend {
    public nonisolated let adapterName = "kii"
    public nonisolated let configuration: KiiConfiguration
    /// ``KiiWire/capabilities``; in admin mode (client credentials in the URL) session-less calls act as the app
    /// admin and read every object (``MBaaSCore/Capabilities/Feature/completeReads``).
    public nonisolated var capabilities: Capabilities {
        configuration.adminCredentials == nil ? KiiBackend.capabilities : KiiBackend.adminCapabilities
    }
    static let adminCapabilities: Capabilities = {
        var c = KiiWire.capabilities
        c.features.insert(.completeReads)
        c.notes[.completeReads] = nil
        return c
    }()
    nonisolated let requests: KiiRequestBuilder
    nonisolated let context: BackendContext

    var userSession: Session?
    var adminToken: (token: String, expiresAt: Date?)?
    var refreshTask: Task<Session, any Error>?

    public init(configuration: KiiConfiguration, context: BackendContext = BackendContext()) {
        self.configuration = configuration
        self.context = context
        self.requests = KiiRequestBuilder(configuration: configuration)
    }

    /// Opens a backend from a `kii://` URL (see ``KiiConfiguration``).
    public init(url: BackendURL, context: BackendContext = BackendContext()) throws(MBaaSError) {
        self.init(configuration: try KiiConfiguration(url: url), context: context)
    }

    // MARK: Capabilities

    /// What Kii can and cannot do through this adapter, with the reasons (``KiiWire/capabilities``).
    public static var capabilities: Capabilities { KiiWire.capabilities }

    // MARK: Sessions and requests

    /// The session's token when it is valid, refreshing it first when less than five minutes remain and Kii issued a
    /// refresh token (kii.md §2.1); else the admin token in admin mode; else `nil` (anonymous).
    func credential(requireUser: Bool) async throws -> (token: String?, isUser: Bool) {
        if var session = userSession {
            if let expiresAt = session.expiresAt, expiresAt.timeIntervalSince(context.now) < 300 {
                if session.refreshToken != nil {
                    session = try await refreshSession()
                } else if expiresAt <= context.now {
                    userSession = nil
                    throw MBaaSError(.unauthorized, "the Kii session expired at \(ISO8601.format(expiresAt)); log in again")
                }
            }
            return (session.token, true)
        }
        if requireUser {
            throw MBaaSError(.unauthorized, "this Kii call needs a logged-in user (users/me); log in first")
        }
        if let admin = configuration.adminCredentials { return (try await adminAccessToken(admin), false) }
        return (nil, false)
    }

    func adminAccessToken(_ admin: KiiConfiguration.AdminCredentials) async throws -> String {
        if let t = adminToken, t.expiresAt.map({ $0.timeIntervalSince(context.now) >= 300 }) ?? true { return t.token }
        let response = try await transmit(try requests.token(.clientCredentials(clientID: admin.clientID, clientSecret: admin.clientSecret)))
        guard response.isSuccess else {
            var error = KiiErrorCodec.error(for: response, authenticated: false, now: context.now)
            error.message = "Kii admin login (client id and secret) failed: " + error.message
            throw error
        }
        let token = try KiiTokenResponse(json: try response.json())
        adminToken = (token.accessToken, token.expiresIn.map { context.now.addingTimeInterval(TimeInterval($0)) })
        return token.accessToken
    }

    /// Sends a request with the current credentials and maps a non-2xx answer to ``MBaaSError``. A `WRONG_TOKEN`
    /// answer ends the session it was sent with.
    func send(_ request: TransportRequest, requireUser: Bool = false) async throws -> TransportResponse {
        let (token, isUser) = try await credential(requireUser: requireUser)
        let response = try await transmit(requests.authorize(request, token: token))
        if response.isSuccess { return response }
        var error = KiiErrorCodec.error(for: response, authenticated: token != nil, now: context.now)
        if let code = error.vendorCode, KiiErrorCodec.sessionEndingCodes.contains(code), let token {
            if isUser {
                if userSession?.token == token { userSession = nil }
                error.message += " (the session has ended; log in again)"
            } else if adminToken?.token == token {
                adminToken = nil
            }
        }
        throw error
    }

    /// Sends through the transport, turning anything thrown into ``MBaaSError``.
    func transmit(_ request: TransportRequest) async throws -> TransportResponse {
        context.logger.debug("kii request", metadata: ["method": "\(request.method)", "path": "\(request.url.path)"])
        do {
            return try await context.transport.send(request)
        } catch {
            throw MBaaSError.wrap(error)
        }
    }

    /// Parses a JSON body, as ``MBaaSError/Kind/decoding`` when it is not JSON.
    nonisolated func json(_ response: TransportResponse) throws -> JSON {
        do { return try response.json() } catch { throw MBaaSError.wrap(error) }
    }

    nonisolated func address(_ className: String) throws(MBaaSError) -> KiiBucketAddress {
        try KiiBucketAddress(className: className)
    }

    public func close() async {
        refreshTask?.cancel()
    }
}
