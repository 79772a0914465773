import Foundation
import MBaaSCore
import MBaaSSalesforceWire

/// One request being answered by the ``SalesforceDialect``: its route, its API version and the store.
struct SalesforceCall {
    let dialect: SalesforceDialect
    let request: TransportRequest
    let route: SalesforceRoute
    let version: String

    /// The store as the org sees it: every record to every authenticated user (the org's sharing model, not a
    /// per-record ACL [inferred]).
    var owner: any ServerStore { dialect.store.sharing(session: nil, administrative: true) }

    typealias Fact = SalesforceDialect.Fact
    typealias Facts = SalesforceDialect.Facts

    /// The handler of the route and the facts its answers follow, named where each route is dispatched.
    func handler() -> (facts: Facts, run: () async throws -> TransportResponse) {
        let records = Facts(success: .records, failure: .recordErrors)
        switch (route, request.method) {
        case (.token, .post): return (Facts(.token), { try await token() })
        case (.revoke, .post), (.revoke, .get): return (Facts(.token), { try await revoke() })
        case (.userinfo, .get): return (Facts(.userinfo), { try await userinfo() })
        case (.sobjects(let type), .post): return (records, { _ = try await authenticate(); return try await create(type) })
        case (.sobject(let type, let id), .get): return (records, { _ = try await authenticate(); return try await get(type, id) })
        case (.sobject(let type, let id), .patch): return (records, { _ = try await authenticate(); return try await update(type, id) })
        case (.sobject(let type, let id), .delete): return (records, { _ = try await authenticate(); return try await delete(type, id) })
        case (.blob(let type, let id, let field), .get):
            return (Facts(.files), { _ = try await authenticate(); return try await blob(type, id, field) })
        case (.query(let all), .get):
            return (Facts(success: .query, failure: .queryErrors), { _ = try await authenticate(); return try await query(all: all) })
        case (.queryMore(let locator, _), .get):
            return (Facts(success: .query, failure: .queryErrors), { _ = try await authenticate(); return try await queryMore(locator) })
        case (.describe(let type), .get): return (records, { _ = try await authenticate(); return try await describe(type) })
        case (.collectionRetrieve(let type), .post):
            return (Facts(.collections), { _ = try await authenticate(); return try await retrieve(type) })
        case (.collections, .post), (.collections, .patch), (.collections, .delete):
            return (Facts(.collections), { _ = try await authenticate(); return try await collection() })
        case (.composite, .post):
            return (Facts(.composite), { _ = try await authenticate(); return try await composite() })
        default:
            return (Facts(.unknownPath), {
                // Salesforce checks the session before the method [inferred]: an unknown method with a bad token is 401.
                if case .token = route {} else if case .revoke = route {} else if case .userinfo = route {} else { _ = try await authenticate() }
                return Self.errors(404, [SalesforceErrorItem(message: "The requested resource does not exist", errorCode: "NOT_FOUND")])
            })
        }
    }

    // MARK: Sessions

    static let invalidSession = MBaaSError(.unauthorized, "Session expired or invalid", vendorCode: "INVALID_SESSION_ID")

    /// The grant of the request's `Authorization: Bearer` token; 401 INVALID_SESSION_ID when it is missing, unknown,
    /// revoked or expired [capture].
    func authenticate() async throws -> SalesforceDialectState.Grant {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else { throw Self.invalidSession }
        let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        guard let grant = await dialect.state.grant(token), grant.expires > dialect.clock() else { throw Self.invalidSession }
        return grant
    }

    // MARK: Bodies and answers

    /// The request's JSON object body; anything else is 400 JSON_PARSER_ERROR [doc].
    func jsonObject() throws -> JSONObject {
        guard let data = request.body, !data.isEmpty, let json = try? JSON.parse(data), let object = json.objectValue else {
            throw MBaaSError(.invalidRequest, "The request body is not a JSON object.", vendorCode: "JSON_PARSER_ERROR")
        }
        return object
    }

    /// The query string's items, percent-decoded (`+` is a space, as the query forms send it).
    var queryItems: [String: String] {
        var out: [String: String] = [:]
        for item in URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedQueryItems ?? [] {
            let decode = { (s: String) in percentDecode(s.replacingOccurrences(of: "+", with: " ")) ?? s }
            if out[decode(item.name)] == nil { out[decode(item.name)] = decode(item.value ?? "") }
        }
        return out
    }

    /// `scheme://host[:port]` as the client addressed the server: the instance URL.
    var origin: String {
        let host = request.url.host.map { h in h.contains(":") ? "[\(h)]" : h } ?? "localhost"
        let port = request.url.port.map { ":\($0)" } ?? ""
        return "\(request.url.scheme ?? "http")://\(host)\(port)"
    }

    static func json(_ status: Int, _ body: JSON, headers: HTTPFields = [:]) -> TransportResponse {
        var fields = headers
        fields[.contentType] = "application/json;charset=UTF-8"
        return TransportResponse(status: .init(code: status), headers: fields, body: body.data())
    }

    static func noContent() -> TransportResponse { TransportResponse(status: .init(code: 204), headers: [:], body: Data()) }

    /// The REST error array [capture].
    static func errors(_ status: Int, _ items: [SalesforceErrorItem]) -> TransportResponse {
        json(status, SalesforceErrorItem.body(items))
    }

    /// The answer to an error: the OAuth form on the OAuth routes, the REST array elsewhere; a 412 has no body.
    func errorResponse(_ e: MBaaSError) -> TransportResponse {
        switch route {
        case .token, .revoke:
            let (status, body) = SalesforceErrorCodec.oauthError(for: e)
            return Self.json(status, body.json)
        case .userinfo:
            // The Mobile SDK refreshes on a 403 whose body is exactly Bad_OAuth_Token [sdk].
            var response = TransportResponse(status: .init(code: 403), headers: [:], body: Data("Bad_OAuth_Token".utf8))
            response.headers[.contentType] = "text/plain;charset=UTF-8"
            return response
        default:
            if let status = e.httpStatus, status == 400, e.vendorCode == "MALFORMED_QUERY" {
                return Self.errors(400, [SalesforceErrorItem(message: e.message, errorCode: "MALFORMED_QUERY")])
            }
            let (status, item) = SalesforceErrorCodec.restError(for: e)
            if status == 412 { return TransportResponse(status: .init(code: 412), headers: [:], body: Data()) }
            return Self.errors(status, [item])
        }
    }
}
