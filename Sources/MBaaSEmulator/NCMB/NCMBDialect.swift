public import Foundation
public import Logging
public import MBaaSCore
public import MBaaSNCMBWire

/// The NIFCLOUD mobile backend (NCMB) REST dialect on any server store (``MBaaSCore/ServerStore``): `mbaas serve --dialect ncmb`.
///
/// Built on `MBaaSNCMBWire`, the wire module the NCMB client uses: ``NCMBRoute`` parses paths, ``NCMBSigner``
/// verifies signatures, ``NCMBQuery``/``NCMBWhere`` and ``NCMBQueryTranslator`` read queries, ``NCMBFieldChange``
/// reads updates, ``NCMBCodec`` converts values and ``NCMBErrorBody`` writes errors.
///
/// # What it enforces (evidence per rule: doc, sdk, inferred)
/// - Every request needs `X-NCMB-Application-Key` equal to the application key, an `X-NCMB-Timestamp` within
///   ``Configuration/timestampTolerance`` of the server clock, and a valid `X-NCMB-Signature` (SignatureVersion
///   2 over the host, with or without the `Host` header's port [sdk: the Python SDK signs with `NCMB.fqdn`, the
///   Swift and JS SDKs with the host alone], the path and, for GET, the query as sent): otherwise 401 E401001 [doc]. The
///   tolerance is [inferred]: NCMB documents that a stale timestamp is refused, not by how much.
/// - `X-NCMB-Apps-Session-Token` acts as that user for ACLs; an unknown, expired or logged-out token is 401
///   E401001 [doc].
/// - ACLs (`*`, user ids, `role:NAME`) are enforced by the store: a record the caller may not read is 404
///   E404001, one it may read but not write is 403 E403001 [inferred: NCMB documents E403001 "No access with ACL"].
///   A record created without `acl` gets `{"*":{"read":true,"write":true}}` [sdk: ncmb_swift `NCMBACL.default`];
///   a user gets public read and owner write [inferred].
/// - Paths and status codes: creates 201, reads, updates and deletes 200 [sdk fixtures]; an unknown path is 404
///   E404002 "None service." [inferred]; `POST /batch` is E404002 too (NCMB has no public batch endpoint, ncmb.md §1.5).
/// - Queries: `where`, `order` (default `-createDate`), `limit` 1…1000 (default 100; 0 with `count=1` for a count
///   only), `skip`, `count=1` [doc]; `$relatedTo` on a role's `belongUser`/`belongRole` relation; `$inQuery`,
///   `$select` and geo operators are answered 400 E400002 as unsupported by the emulator (the vendor has them).
/// - Dates: `createDate`/`updateDate` as ISO-8601 UTC with milliseconds [doc]; timestamps are accepted with or
///   without milliseconds (tolerant).
/// - Tolerance: `Content-Type` on a GET, a trailing slash, and `objectId`/`createDate`/`updateDate` echoed back
///   in a create or update body are accepted (ignored) [sdk: clients send them].
/// - Files: names are keys (an existing name is 409 E409001 [inferred]), non-ASCII names are 403 E403002 [capture:
///   UserCommunity #1304], a name with `/`, `\` or `..` never reaches the disk (400 E400005); a file over
///   ``Configuration/maxFileSize`` is 413 E413001 and any other body over ``maxRequestBodySize`` 413 E413002 [doc codes].
/// - Users: sign-up `POST /users` (201 with `sessionToken`), log-in `POST /login` (JSON) or `GET /login` (legacy
///   query form), `GET /logout`; a wrong password is 401 E401002, a taken `userName` 409 E409001 [doc].
///   The emulator cannot change a user's `userName`, `mailAddress` or `password` after sign-up: such updates are
///   400 E400005 naming the field (the store keeps credentials apart from the profile).
///
/// The emulator is an oracle of MBaaSKit's own reading of NCMB: a pass against it proves consistency with that
/// reading (and with the vendor SDK that drives it in CI), not with the closed service.
public struct NCMBDialect: EmulatorDialect {
    public struct Configuration: Sendable {
        public var applicationKey: String
        public var clientKey: String
        public var apiVersion: String
        /// How far `X-NCMB-Timestamp` may be from the server clock (default 15 minutes).
        public var timestampTolerance: TimeInterval
        /// The largest file upload (default 5 MiB; NCMB's limit depends on the plan).
        public var maxFileSize: Int
        /// The largest JSON body (default 1 MiB).
        public var maxDocumentSize: Int

        public init(applicationKey: String, clientKey: String, apiVersion: String = NCMBWire.apiVersion,
                    timestampTolerance: TimeInterval = 900, maxFileSize: Int = 5 << 20, maxDocumentSize: Int = 1 << 20) {
            self.applicationKey = applicationKey
            self.clientKey = clientKey
            self.apiVersion = apiVersion
            self.timestampTolerance = timestampTolerance
            self.maxFileSize = maxFileSize
            self.maxDocumentSize = maxDocumentSize
        }
    }

    public let name = "ncmb"
    public let configuration: Configuration
    /// The store: the emulator acts through views of it that hold each request's session.
    public let store: any ServerStore
    let clock: @Sendable () -> Date
    let logger: Logger

    /// - Parameters:
    ///   - store: the server store holding the app's data (the Local store in memory or a file, or any other ``MBaaSCore/ServerStore``).
    ///   - clock: the server clock, for timestamps (injectable for tests).
    public init(store: any ServerStore, configuration: Configuration, clock: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "mbaas.emulator.ncmb")) {
        self.store = store
        self.configuration = configuration
        self.signer = NCMBSigner(applicationKey: configuration.applicationKey, clientKey: configuration.clientKey)
        self.clock = clock
        self.logger = logger
    }

    /// The multipart envelope around the largest file.
    public var maxRequestBodySize: Int { max(configuration.maxFileSize + 64 << 10, configuration.maxDocumentSize) }

    public func requestTooLarge(limit: Int) -> TransportResponse {
        NCMBErrorBody(code: "E413002", error: "Document size limit exceeded (at most \(limit) bytes).").response()
    }

    /// The error body of `error` (``EmulatorDialect/answer(_:to:)``): NCMB documents no timeout-style code, so the
    /// server's request deadline answers 503 E503001 (service unavailable) [inferred from the error table].
    public func answer(_ error: MBaaSError, to request: TransportRequest) -> TransportResponse {
        NCMBErrorBody(error).response()
    }

    public func backendURL(host: String, port: Int) -> String {
        "ncmb+http://\(percentEncode(configuration.applicationKey)):\(percentEncode(configuration.clientKey))@\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// A `GET` of one object (`/classes/C/ID`, `/users/ID`, `/roles/ID`, …) on a store whose point reads run to their
    /// end (``MBaaSCore/ServerStore/pointReadsRunToTheirEnd``).
    public func isPointRead(_ request: TransportRequest) -> Bool {
        guard request.method == .get, store.pointReadsRunToTheirEnd, let path = NCMBSigner.wireParts(of: request.url)?.path,
              case .object = NCMBRoute(path: path, apiVersion: configuration.apiVersion) else { return false }
        return true
    }

    /// Made once: its HMAC key schedule is the costly part of checking a request's signature.
    let signer: NCMBSigner

    public func respond(to request: TransportRequest) async -> TransportResponse {
        let path = NCMBSigner.wireParts(of: request.url)?.path ?? request.url.path
        guard let route = NCMBRoute(path: path, apiVersion: configuration.apiVersion) else {
            return NCMBErrorBody(code: "E404002").response()
        }
        if let refusal = authenticate(request) { return refusal }
        do {
            let call = NCMBCall(dialect: self, request: request, route: route)
            return try await call.answer()
        } catch {
            let e = MBaaSError.wrap(error)
            if e.kind == .internal || e.kind == .localIO {
                logger.error("ncmb dialect: \(request.method) \(path) failed: \(e.message)")
            }
            return NCMBErrorBody(e).response()
        }
    }

    /// An `X-NCMB-Timestamp`: ISO-8601 with a zone, or without one, read as UTC. [sdk] The Python SDK (PyPI
    /// `NCMB` 1.3.1, `NCMBRequest.exec`) sends `datetime.now().isoformat()`: local time, microseconds, no zone; a
    /// zone-less stamp is taken as UTC [inferred], so such a client must run with `TZ=UTC` to be within the
    /// tolerance.
    static func timestamp(_ text: String) -> Date? {
        ISO8601.parse(text) ?? ISO8601.parse(text + "Z")
    }

    /// `nil` when the application key, timestamp and signature are good; else the E401001 answer.
    func authenticate(_ request: TransportRequest) -> TransportResponse? {
        guard request.headers.value(NCMBSigner.Field.applicationKey) == configuration.applicationKey,
              let stamp = request.headers.value(NCMBSigner.Field.timestamp), let sent = Self.timestamp(stamp),
              abs(sent.timeIntervalSince(clock())) <= configuration.timestampTolerance,
              signer.verify(request)
        else { return NCMBErrorBody(code: "E401001").response() }
        return nil
    }
}
