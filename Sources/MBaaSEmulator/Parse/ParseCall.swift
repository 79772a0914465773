import Foundation
import MBaaSCore
import MBaaSParseWire

/// One request being answered by the ``ParseDialect``: its route, its caller, and the store view acting for it.
struct ParseCall {
    let dialect: ParseDialect
    let request: TransportRequest
    let route: ParseRoute
    let caller: ParseDialect.Caller
    /// The store acting as the caller: the owner for the master key, the session's user, or anonymous.
    let backend: any ServerStore
    /// The store acting as the application owner, for the dialect's own bookkeeping (role membership, unique
    /// names, anonymous users): never used to answer what a client caller may see.
    var owner: any ServerStore { dialect.store.sharing(session: nil, administrative: true) }

    init(dialect: ParseDialect, request: TransportRequest, route: ParseRoute, caller: ParseDialect.Caller) {
        self.dialect = dialect
        self.request = request
        self.route = route
        self.caller = caller
        switch caller {
        case .master: backend = dialect.store.sharing(session: nil, administrative: true)
        case .client(let token):
            backend = dialect.store.sharing(session: token.map { Session(token: $0, userId: "") }, administrative: false)
        }
    }

    var token: String? { if case .client(let t) = caller { t } else { nil } }
    var isMaster: Bool { caller == .master }

    /// The handler of the call's route and the facts its answers follow (``ParseDialect/Fact``): each route names
    /// the documented rule of its success and of its failure where it is dispatched.
    func handler() -> (facts: ParseDialect.Facts, run: () async throws -> TransportResponse) {
        typealias Facts = ParseDialect.Facts
        let objects = Facts(success: .objects, failure: .objectErrors)
        switch (route, request.method) {
        case (.objects(ParseWire.sessionClass), _), (.object(ParseWire.sessionClass, _), _):
            return (objects, { throw MBaaSError(.unsupported, "the emulator does not serve _Session objects", vendorCode: "119") })
        case (.objects(ParseWire.roleClass), .get): return (Facts(.roles), { try await query(ParseWire.roleClass) })
        case (.objects(let cls), .get): return (Facts(success: .queries, failure: .queryErrors), { try await query(cls) })
        case (.objects(ParseWire.userClass), .post): return (Facts(.signUp), { try await signUp() })
        case (.objects(let cls), .post): return (cls == ParseWire.roleClass ? Facts(.roles) : objects, { try await create(cls) })
        case (.object(let cls, let id), .get): return (cls == ParseWire.roleClass ? Facts(.roles) : objects, { try await get(cls, id) })
        case (.object(let cls, let id), .put): return (cls == ParseWire.roleClass ? Facts(.roles) : objects, { try await update(cls, id) })
        case (.object(let cls, let id), .delete): return (cls == ParseWire.roleClass ? Facts(.roles) : objects, { try await delete(cls, id) })
        case (.me, .get): return (Facts(.logIn), { try await me() })
        case (.login, .post), (.login, .get): return (Facts(.logIn), { try await logIn() })
        case (.logout, .post): return (Facts(.logIn), { try await logOut() })
        case (.requestPasswordReset, .post):
            return (Facts(.logIn), { throw MBaaSError(.unsupported, "the emulator sends no e-mail: password reset is not available", vendorCode: "1") })
        case (.batch, .post): return (Facts(.batch), { try await batch() })
        case (.file(let name), .post): return (Facts(.files), { try await upload(name) })
        case (.file(let name), .delete): return (Facts(.files), { try await deleteFile(name) })
        case (.schemas, .get): return (objects, { try await schemas() })
        default: return (Facts(.unknownPath), { ParseDialect.notFound(request.method, dialect.percentEncodedPath(request.url)) })
        }
    }

    /// A token the store does not know (never issued, expired, logged out) is 209 on every call [doc].
    func checkSession(_ token: String) async throws {
        do { _ = try await backend.currentUser() } catch let e as MBaaSError where e.kind == .unauthorized {
            throw Self.invalidSession
        }
    }

    static let invalidSession = MBaaSError(.unauthorized, "Invalid session token", vendorCode: "209")

    // MARK: Bodies and answers

    /// The JSON object body; a non-JSON or non-object body is 107 "invalid JSON" [doc].
    func jsonBody() throws -> JSONObject {
        guard let data = request.body, !data.isEmpty else { return [:] }
        guard let json = try? JSON.parse(data), let object = json.objectValue else {
            throw MBaaSError(.invalidRequest, "invalid JSON", vendorCode: "107")
        }
        return object
    }

    static func json(_ status: Int, _ body: JSON, headers: HTTPFields = [:]) -> TransportResponse {
        var fields = headers
        fields[.contentType] = "application/json; charset=utf-8"
        return TransportResponse(status: .init(code: status), headers: fields, body: body.data())
    }

    var queryItems: [(String, String)] {
        let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedQueryItems ?? []
        return items.map { (percentDecode($0.name) ?? $0.name, percentDecode($0.value ?? "") ?? "") }
    }

    /// A value of a request body as Parse JSON (111 "invalid type" naming the field when it is malformed).
    static func value(_ json: JSON, _ key: String) throws -> Value {
        do { return try ParseCodec.decode(json, path: key) } catch {
            throw MBaaSError(.invalidRequest, "invalid type for key \(key): \(error.message)", vendorCode: "111")
        }
    }

    static func acl(_ json: JSON) throws -> ACL {
        do { return try ParseCodec.decodeACL(json) } catch {
            throw MBaaSError(.invalidRequest, "Invalid ACL: \(error.message)", vendorCode: "123")
        }
    }

    /// Parse refuses names starting with `_` or `$`, or holding anything but letters, digits and `_` [doc:
    /// "Invalid field name", code 105].
    static func checkFieldName(_ key: String) throws {
        let valid = !key.isEmpty && key.first != "_" && key.first != "$"
            && key.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_") }
        if !valid { throw MBaaSError(.invalidRequest, "Invalid field name: \(key).", vendorCode: "105") }
    }
}
