import Foundation
public import MBaaSCore

/// A PocketBase server (0.40) as a ``Backend``: records in collections, files in file fields, users in an auth
/// collection, per-record ACLs enforced by API rules.
///
/// Open one from a URL through ``PocketBaseBackendFactory`` (`pocketbase+http://admin%40example.com:PW@127.0.0.1:8090`,
/// see ``PocketBaseConfiguration`` for the rules and options), or with ``init(configuration:context:)``.
///
/// - Schema: with superuser credentials the backend creates a collection on the first record of a class and adds
///   a column for each new field (plus a `<field>__type` column with the neutral type, see
///   ``PocketBaseRecordCodec``). Collections it creates carry the ACL columns and rules (anyone may create;
///   list/view and update/delete follow each record's ACL; no ACL = public). Collections made outside MBaaSKit
///   keep their own rules; their fields are read by their column types.
/// - Record calls act as the logged-in user, else as a guest (or as the superuser with `data=superuser`), so the
///   rules apply as in the app. Superuser credentials are used only for the schema and server settings.
/// - Every HTTP request goes through the context's transport; time is read from its clock.
public actor PocketBaseBackend: Backend {
    public nonisolated let adapterName = "pocketbase"
    public nonisolated let capabilities: Capabilities
    public nonisolated let configuration: PocketBaseConfiguration
    nonisolated let context: BackendContext
    let logger: Logger

    var currentSession: Session?
    var superuserToken: String?
    /// Collection definitions (superuser), by lowercased name.
    var definitions: [String: PocketBaseCollection] = [:]
    /// Schemas learned from sample records (other clients), by lowercased name.
    var sampledSchemas: [String: PocketBaseSchema] = [:]
    /// Collection ids to names, for relation targets.
    var collectionNames: [String: String] = [:]
    /// Schemas built from ``definitions`` (by collection id), so that a write does not rebuild one from the
    /// definition's fields every time; emptied whenever a definition or a collection name changes.
    var definitionSchemas: [String: PocketBaseSchema] = [:]
    var usersReady = false
    var schemaLocked = false
    var schemaWaiters: [CheckedContinuation<Void, Never>] = []
    var fileToken: (token: String, expiresAt: Date?, owner: String)?

    public init(configuration: PocketBaseConfiguration, context: BackendContext = BackendContext()) {
        self.configuration = configuration
        self.context = context
        var capabilities = PocketBaseBackend.capabilities
        if configuration.dataAsSuperuser {
            // Session-less calls act as the superuser, whom API rules do not bind.
            capabilities.features.insert(.completeReads)
            capabilities.notes[.completeReads] = nil
        }
        self.capabilities = capabilities
        var logger = context.logger
        logger[metadataKey: "adapter"] = "pocketbase"
        self.logger = logger
    }

    // MARK: Capabilities

    static let regexNote = "PocketBase filters have no regular expressions (only SQL LIKE, which is case-insensitive and not a regex)"
    static let containsAllNote = "PocketBase cannot look inside JSON arrays (the :each modifier works only on select, relation and file fields)"
    static let inJSONNote = "the field is a JSON column and PocketBase cannot test membership inside JSON arrays"

    /// What this adapter can do against PocketBase 0.40, and why the rest is missing.
    public static let capabilities: Capabilities = {
        var features: Set<Capabilities.Feature> = [
            .objects, .multiKeySort, .skip, .selectKeys, .count, .batch, .atomicBatch, .acl, .nestedKeys, .files, .fileDelete,
            .fileList, .fileAttachment, .auth, .signUp, .listClasses, .listUsers, .importUsers, .userFields, .userEmail, .fileACL, .fileACLListing, .unicodeFileNames,
            .queryValue("Date"), .queryValue("Pointer"), .aclReadOnly,
        ]
        for type in ["null", "bool", "double", "string", "Date", "Bytes", "array", "object", "Pointer", "File", "GeoPoint"] {
            features.insert(.valueType(type))
        }
        return Capabilities(
            features: features,
            operators: Set(QueryOperator.allCases).subtracting([.regex, .containsAll]),
            maxPageSize: 1000, defaultPageSize: 100, maxBatchSize: 50,
            notes: [
                .optimisticLocking: "PocketBase has no conditional write: a rule on `updated` is checked on a read before the write (not atomically) and superusers bypass rules, so records carry no version",
                .fieldOperations: "PocketBase applies its `field+`/`field-` modifiers to the record the request loaded (a concurrent update can be lost) and JSON fields have none; only set and delete are supported",
                .anonymousAuth: "PocketBase has no anonymous users: a guest simply sends no token",
                .serverLogout: "PocketBase tokens are stateless JWTs with no logout endpoint; logging out clears the session locally",
                .roles: "PocketBase has no roles or groups; ACLs name everyone and user ids",
                .mixedFieldTypes: "a PocketBase field is a typed column, made from the first value written; a value of another type is refused",
                .operator(.regex): regexNote,
                .operator(.containsAll): containsAllNote,
                .valueType("int"): "integers within ±2^53 only: PocketBase numbers are 64-bit floats; larger integers are refused (unsupported)",
                .fileNames: "PocketBase sanitizes a file's name and adds a random suffix: keep the name the upload returns",
                .acl: "per-record ACLs via API rules on collections this adapter creates; roles and groups are unsupported; superusers bypass rules",
                .completeReads: "a user or guest reads what the API rules grant it; data=superuser (or an administrative opening, as mbaas migrate's) reads every record",
                .nestedKeys: "dotted keys into JSON (object) fields; comparisons follow SQLite's JSON ordering",
            ])
    }()

    // MARK: Identities

    /// Whom a request acts as.
    enum Acting {
        /// No token.
        case guest
        /// The logged-in user; else the superuser with `data=superuser`; else a guest.
        case data
        /// The logged-in user; `unauthorized` without one.
        case session
        /// The superuser (schema and settings); logs in on demand and once more on a 401.
        case superuser
    }

    /// Seconds before a token's expiry at which it is refreshed.
    static let refreshMargin: TimeInterval = 300

    func superuserAuthorization(refresh: Bool = false) async throws -> String {
        guard case .superuser(let email, let password) = configuration.credentials else {
            throw MBaaSError.unsupported(
                "changing the PocketBase schema or settings", by: "pocketbase",
                reason: "this client has no superuser credentials (open the backend with a superuser's e-mail and password)")
        }
        if !refresh, let token = superuserToken { return token }
        let response = try await send(
            .post, "/api/collections/_superusers/auth-with-password",
            json: .object(["identity": .string(email), "password": .string(password)]), as: .guest,
            operation: .authWithPassword)
        let auth = try PocketBaseAuthResponse(json: try response.json())
        superuserToken = auth.token
        return auth.token
    }

    /// The token of the current session, refreshed when close to expiry; an expired session ends here.
    func sessionAuthorization() async throws -> String? {
        guard let session = currentSession else { return nil }
        let now = context.now
        if let expiry = session.expiresAt {
            if expiry <= now {
                endSession()
                throw MBaaSError(.unauthorized, "the PocketBase session expired at \(ISO8601.format(expiry)); log in again")
            }
            if expiry.timeIntervalSince(now) < Self.refreshMargin { try await refreshSession() }
        }
        return currentSession?.token
    }

    func endSession() {
        currentSession = nil
        fileToken = nil
    }

    func authorization(for acting: Acting) async throws -> String? {
        switch acting {
        case .guest: return nil
        case .superuser: return try await superuserAuthorization()
        case .session:
            guard let token = try await sessionAuthorization() else {
                throw MBaaSError(.unauthorized, "no PocketBase session: log in first")
            }
            return token
        case .data:
            if let token = try await sessionAuthorization() { return token }
            return configuration.dataAsSuperuser ? try await superuserAuthorization() : nil
        }
    }

    /// Whether record calls currently carry a token (a user's or the superuser's).
    var actsAsSomeone: Bool { currentSession != nil || configuration.dataAsSuperuser }

    // MARK: HTTP

    /// Sends one request and returns the successful response; an error status is mapped and thrown.
    func send(
        _ method: TransportRequest.Method, _ path: String, query: [(String, String)] = [], json: JSON? = nil,
        form: MultipartForm? = nil, as acting: Acting, operation: PocketBaseWire.Operation = .general
    ) async throws -> TransportResponse {
        var token = try await authorization(for: acting)
        var retried = false
        var reloads = 0
        while true {
            var headers: HTTPFields = [:]
            var body: Data?
            if let json {
                headers["Content-Type"] = "application/json"
                body = json.data()
            } else if let form {
                headers["Content-Type"] = form.contentType
                body = form.encoded()
            }
            if let token { headers["Authorization"] = token }
            let request = TransportRequest(
                method: method, url: try URL.build(base: configuration.baseURL, path: path, query: query),
                headers: headers, body: body, timeout: configuration.timeout)
            let response: TransportResponse
            do { response = try await context.transport.send(request) } catch { throw MBaaSError.wrap(error) }
            if response.isSuccess { return response }
            if response.status == 404, reloads < 3, acting != .superuser,
               let collection = try await staleCollectionCache(path: path, body: response.body)
            {
                // PocketBase caches collection definitions in memory and can lose one when clients change the
                // schema at the same moment; saving the collection again reloads that cache (a few times at most,
                // as another concurrent change can race the reload too).
                logger.warning("PocketBase lost collection '\(collection)' from its cache; reloading it")
                _ = try await send(.patch, "/api/collections/\(percentEncode(collection))", json: .object([:]), as: .superuser)
                reloads += 1
                continue
            }
            if response.status == 401, token != nil {
                switch acting {
                case .superuser where !retried:
                    token = try await superuserAuthorization(refresh: true)
                    retried = true
                    continue
                case .session, .data:
                    // The server refused the user's token: the session is over.
                    if currentSession != nil { endSession() }
                default: break
                }
            }
            throw PocketBaseWire.error(status: response.status.code, body: response.body, headers: response.headers,
                                       operation: operation, now: context.now)
        }
    }

    /// For a 404 "Missing or invalid collection context" on a collection that exists (superuser view), the
    /// collection's name; else `nil`.
    func staleCollectionCache(path: String, body: Data) async throws -> String? {
        guard configuration.managesSchema, path.hasPrefix("/api/collections/"),
              let message = (try? JSON.parse(body))?["message"]?.stringValue, message.contains("collection context")
        else { return nil }
        let name = path.dropFirst("/api/collections/".count).split(separator: "/").first.map { String($0).removingPercentEncoding ?? String($0) }
        guard let name, try await definition(name, refresh: true) != nil else { return nil }
        return name
    }

    /// Sends a request and parses the JSON answer.
    func sendJSON(
        _ method: TransportRequest.Method, _ path: String, query: [(String, String)] = [], json: JSON? = nil,
        form: MultipartForm? = nil, as acting: Acting, operation: PocketBaseWire.Operation = .general
    ) async throws -> JSON {
        try await send(method, path, query: query, json: json, form: form, as: acting, operation: operation).json()
    }

    // MARK: Lifecycle

    public func close() async {
        endSession()
        superuserToken = nil
    }
}

/// Opens `pocketbase://` and `pocketbase+http://` URLs.
public struct PocketBaseBackendFactory: BackendFactory {
    public let schemes = ["pocketbase"]
    public let adapterName = "pocketbase"
    /// `data=superuser` makes record calls act as the superuser (rules bypassed).
    public var administrativeOptions: Set<String> { ["data"] }
    /// The generic profile: PocketBase speaks plain HTTP (`Authorization` with the record's `token`), with no
    /// protocol headers of its own.
    public var wireProfile: WireProfile { .generic }

    public init() {}

    /// Opens the backend; with `auth=<collection>` credentials it logs that user in first.
    public func open(_ url: BackendURL, context: BackendContext) async throws -> any Backend {
        var configuration = try PocketBaseConfiguration(url: url)
        // An administrative opening (a migration) acts as the superuser for session-less calls.
        if context.administrative, configuration.managesSchema { configuration.dataAsSuperuser = true }
        let backend = PocketBaseBackend(configuration: configuration, context: context)
        if case .user(let collection, let identity, let password) = configuration.credentials {
            _ = try await backend.logIn(identity: identity, password: password, collection: collection)
        }
        return backend
    }
}
