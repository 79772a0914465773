public import Foundation
public import Logging
public import MBaaSCore
public import MBaaSParseWire

/// The Parse Server REST dialect on any server store (``MBaaSCore/ServerStore``): `mbaas serve --dialect parse`.
///
/// Built on `MBaaSParseWire`, the wire module the Parse client uses: ``ParseRoute`` parses paths, ``ParseQuery`` and
/// ``ParseQueryTranslator`` read finds, ``ParseFieldChange`` reads updates, ``ParseCodec`` converts values, ACLs and
/// records, ``ParseBatchRequest``/``ParseBatchResponse`` carry batches and ``ParseErrorBody`` writes errors.
///
/// # What it enforces (evidence per rule: doc, sdk, inferred)
/// - Every request names the application in `X-Parse-Application-Id` and carries the REST API key
///   (`X-Parse-REST-API-Key`) or the master key (`X-Parse-Master-Key`); otherwise 403 `{"error":"unauthorized"}`
///   [doc: REST guide, Quick Reference; parse.md, Errors]. The master key acts as the application owner: every ACL
///   grants it [doc].
/// - `X-Parse-Session-Token` acts as that user; an unknown, expired or logged-out token is 400 code 209 "Invalid
///   session token" [doc: REST guide, Sessions].
/// - ACLs (`*`, user ids, `role:Name`) are enforced by the store: an object the caller may not read is 101 "Object
///   not found." (Parse does not tell hidden from missing) [doc]; one it may read but not write is 101 as well on
///   update and delete [inferred from parse-server's RestWrite, which finds the object with the caller's ACL]. An
///   object created without `ACL` is public read and write; a user gets public read and owner write [doc: REST
///   guide, Security].
/// - Objects: create 201 with `Location`, `objectId` and `createdAt`; update 200 `{"updatedAt"}`; delete 200 `{}`;
///   reads carry `objectId`, `createdAt`, `updatedAt`, `ACL` [doc]. Relations (`AddRelation`/`RemoveRelation`)
///   read back as `{"__type":"Relation","className":…}` [doc]; `$relatedTo` is not answered (its neutral form is
///   the role membership only).
/// - Finds: `where` with the neutral operator set, `order`, `limit` (default 100), `skip`, `keys`, `count=1`
///   [doc]; `include`, `excludeKeys`, `$select`, `$inQuery` and geo operators are 400 code 102 naming them
///   (Parse has them; the emulator does not).
/// - Batch: `POST /batch` of at most 50 requests, each answered `{"success":…}` or `{"error":{code,error}}`, not
///   atomic [doc]; a request outside the mount point is an error item.
/// - Users: sign-up `POST /users` (201 with `sessionToken`), anonymous sign-up with `authData.anonymous.id` (the
///   same id again logs that user in, 200) [doc]; `POST /login` (and legacy `GET /login`), `POST /logout`,
///   `GET /users/me`; a taken user name is 202, a wrong password 101 "Invalid username/password." [doc].
///   `requestPasswordReset` is refused: the emulator sends no e-mail.
/// - Roles: `_Role` objects with `name`, `users` and `roles` relations; membership in `users` gives the user the
///   role's ACL entries (sub-roles are not followed). Names: 1 to 64 of `A-Z a-z 0-9 _ . -` (Parse also allows
///   spaces; the store's role names do not).
/// - Files: `POST /files/{name}` stores the bytes under `<32 hex>_<name>` and answers 201 `{"url","name"}` [doc];
///   `GET /files/{appId}/{name}` serves them; `DELETE /files/{name}` needs the master key [doc]. Names follow
///   Parse's pattern (``ParseWire/isValidFileName(_:)``): code 122 otherwise [doc]. A file over
///   ``Configuration/maxFileSize`` and any other body over ``maxRequestBodySize`` is 413 code 130 [inferred].
///
/// With ``Configuration/namesFacts`` each answer names, in an `X-MBaaS-Fact` header, the documented rule it follows:
/// each route names the fact of its success and of its failure where it is dispatched (``ParseCall``'s handler), so
/// a cassette recorded from the dialect carries facts nobody stamped afterwards.
///
/// The emulator is an oracle of MBaaSKit's own reading of Parse Server: a pass against it proves consistency with
/// that reading and with the REST guide's examples (its vectors are tested against it), not with a Parse Server.
public struct ParseDialect: EmulatorDialect {
    public struct Configuration: Sendable {
        public var applicationId: String
        public var restKey: String
        /// The master key; without one, calls that need it (file deletion, `_Session`) are refused.
        public var masterKey: String?
        /// The mount point (`/parse`).
        public var mount: String
        /// The largest file upload (default 20 MiB, parse-server's `maxUploadSize`).
        public var maxFileSize: Int
        /// The largest JSON body (default 20 MiB, the same limit in parse-server).
        public var maxDocumentSize: Int
        /// The prefix of a stored file's name: 32 random hex digits, as parse-server's `randomHexString(32)` [doc].
        /// Injectable so that recordings can name the prefixes they will meet.
        public var filePrefix: @Sendable () -> String = {
            UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        }
        /// Whether each answer names the documented rule it follows in an `X-MBaaS-Fact` header (default `false`):
        /// for authoring cassettes, whose recorder moves the header into the exchange's `fact`.
        public var namesFacts = false

        public init(applicationId: String, restKey: String, masterKey: String? = nil, mount: String = ParseWire.defaultMount,
                    maxFileSize: Int = 20 << 20, maxDocumentSize: Int = 20 << 20) {
            self.applicationId = applicationId
            self.restKey = restKey
            self.masterKey = masterKey
            self.mount = ParseWire.normalizeMount(mount)
            self.maxFileSize = maxFileSize
            self.maxDocumentSize = maxDocumentSize
        }
    }

    public let name = "parse"
    public let configuration: Configuration
    /// The store: the emulator acts through views of it that hold each request's session.
    public let store: any ServerStore
    let clock: @Sendable () -> Date
    let logger: Logger

    public init(store: any ServerStore, configuration: Configuration, clock: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "mbaas.emulator.parse")) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    public var maxRequestBodySize: Int { max(configuration.maxFileSize, configuration.maxDocumentSize) }

    public func requestTooLarge(limit: Int) -> TransportResponse {
        var response = ParseErrorBody(code: 130, error: "The request is larger than \(limit) bytes.").response()
        response.status = 413
        return response
    }

    /// The error body of `error` (``EmulatorDialect/answer(_:to:)``): work stopped for time is code 124 (TIMEOUT).
    public func answer(_ error: MBaaSError, to request: TransportRequest) -> TransportResponse {
        ParseErrorBody(error).response()
    }

    /// A `GET` of one object (`/classes/C/ID`, `/users/ID`, …) on a store whose point reads run to their end
    /// (``MBaaSCore/ServerStore/pointReadsRunToTheirEnd``).
    public func isPointRead(_ request: TransportRequest) -> Bool {
        guard request.method == .get, store.pointReadsRunToTheirEnd, case .object = ParseRoute(path: percentEncodedPath(request.url), mount: configuration.mount)
        else { return false }
        return true
    }

    /// `parse+http://APP_ID:REST_KEY@host:port/parse`.
    public func backendURL(host: String, port: Int) -> String {
        "parse+http://\(percentEncode(configuration.applicationId)):\(percentEncode(configuration.restKey))@"
            + "\(host.contains(":") ? "[\(host)]" : host):\(port)\(configuration.mount)"
    }

    /// Who is calling: the master key, or the REST key with an optional session token.
    enum Caller: Equatable {
        case master
        case client(token: String?)
    }

    public func respond(to request: TransportRequest) async -> TransportResponse {
        await respond(to: request, inBatch: false)
    }

    func respond(to request: TransportRequest, inBatch: Bool) async -> TransportResponse {
        let path = percentEncodedPath(request.url)
        guard let caller = authenticate(request) else {
            var refusal = ParseErrorBody(code: nil, error: "unauthorized").response()
            refusal.status = 403
            return naming(.transport, refusal)
        }
        let filesPrefix = configuration.mount + "/files/" + percentEncode(configuration.applicationId) + "/"
        var facts = Facts(.files)
        do {
            if request.method == .get, path.hasPrefix(filesPrefix) {
                let name = percentDecode(String(path.dropFirst(filesPrefix.count))) ?? ""
                return naming(.files, try await ParseCall(dialect: self, request: request, route: .file(name), caller: caller).download(name))
            }
            guard let route = ParseRoute(path: path, mount: configuration.mount), !(inBatch && route == .batch) else {
                return naming(.unknownPath, Self.notFound(request.method, path))
            }
            let call = ParseCall(dialect: self, request: request, route: route, caller: caller)
            let handler = call.handler()
            facts = handler.facts
            if let token = call.token { try await call.checkSession(token) }
            let answer = try await handler.run()
            return naming(facts.of(answer), answer)
        } catch {
            let e = MBaaSError.wrap(error)
            if e.kind == .internal || e.kind == .localIO {
                logger.error("parse dialect: \(request.method) \(path) failed: \(e.message)")
            }
            return naming(facts.failure, ParseErrorBody(e).response())
        }
    }

    /// An unknown path or method: Express's own 404 [inferred: parse-server has no route for it].
    static func notFound(_ method: TransportRequest.Method, _ path: String) -> TransportResponse {
        ParseCall.json(404, .object(["error": .string("Cannot \(method.rawValue) \(path)")]))
    }

    /// `nil` when the application id or the keys are wrong.
    func authenticate(_ request: TransportRequest) -> Caller? {
        // A file's url is a public link: parse-server serves it to anyone, headers or not [doc: REST guide, Files].
        let filesPrefix = configuration.mount + "/files/" + percentEncode(configuration.applicationId) + "/"
        if request.method == .get, request.headers[ParseHeader.masterKey] == nil,
           percentEncodedPath(request.url).hasPrefix(filesPrefix) {
            return .client(token: nil)
        }
        guard request.headers[ParseHeader.applicationId] == configuration.applicationId else { return nil }
        if let master = request.headers[ParseHeader.masterKey] {
            guard let expected = configuration.masterKey, master == expected else { return nil }
            return .master
        }
        guard request.headers[ParseHeader.restAPIKey] == configuration.restKey else { return nil }
        let token = request.headers[ParseHeader.sessionToken].flatMap { $0.isEmpty ? nil : $0 }
        return .client(token: token)
    }

    func percentEncodedPath(_ url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? url.path
        return path.isEmpty ? "/" : path
    }
}
