public import Foundation
public import MBaaSCore

/// Builds every HTTP request the Kii adapter sends (kii.md §1-§6). Pure: no I/O, no clock, no state.
///
/// Every request carries `X-Kii-AppID` and `X-Kii-AppKey` (kii.md §1.2); ``authorize(_:token:)`` adds
/// `Authorization: Bearer` for a user token.
public struct KiiRequestBuilder: Sendable {
    public var configuration: KiiConfiguration

    public init(configuration: KiiConfiguration) { self.configuration = configuration }

    var appID: String { configuration.appID }

    func request(_ method: TransportRequest.Method, _ path: String, headers: [(String, String)] = [], body: Data? = nil) throws(MBaaSError) -> TransportRequest {
        let url: URL
        do { url = try URL.build(base: configuration.baseURL, path: path) } catch {
            throw MBaaSError.wrap(error)
        }
        var h = HTTPFields([("X-Kii-AppID", configuration.appID), ("X-Kii-AppKey", configuration.appKey)])
        for (n, v) in headers { h.add(n, v) }
        return TransportRequest(method: method, url: url, headers: h, body: body, timeout: configuration.timeout)
    }

    func jsonRequest(_ method: TransportRequest.Method, _ path: String, contentType: String, _ json: JSON, headers: [(String, String)] = [])
        throws(MBaaSError) -> TransportRequest
    {
        try request(method, path, headers: [("Content-Type", contentType)] + headers, body: json.data())
    }

    /// Adds `Authorization: Bearer {token}` (kii.md §1.2).
    public func authorize(_ request: TransportRequest, token: String?) -> TransportRequest {
        guard let token else { return request }
        var r = request
        r.headers["Authorization"] = "Bearer \(token)"
        return r
    }

    // MARK: Objects (kii.md §3)

    /// `POST {bucket}/objects` with `application/vnd.{appID}.{dataType}+json`.
    public func createObject(_ bucket: KiiBucketAddress, body: JSONObject) throws(MBaaSError) -> TransportRequest {
        try jsonRequest(.post, bucket.path(appID: appID) + "/objects",
                        contentType: KiiObjectCodec.contentType(appID: appID, dataType: configuration.dataType), .object(body))
    }

    /// `PUT {bucket}/objects/{id}`: create-only with `If-None-Match: *`, checked replace with `If-Match`, else upsert.
    public func putObject(_ bucket: KiiBucketAddress, id: String, body: JSONObject, ifMatch: String? = nil,
                          createOnly: Bool = false) throws(MBaaSError) -> TransportRequest
    {
        var headers: [(String, String)] = []
        if let ifMatch { headers.append(("If-Match", ifMatch)) }
        else if createOnly { headers.append(("If-None-Match", "*")) }
        return try jsonRequest(.put, bucket.objectPath(appID: appID, objectID: id),
                               contentType: KiiObjectCodec.contentType(appID: appID, dataType: configuration.dataType),
                               .object(body), headers: headers)
    }

    /// `POST {bucket}/objects/{id}` with `X-HTTP-Method-Override: PATCH` (kii.md §3.6).
    public func patchObject(_ bucket: KiiBucketAddress, id: String, changes: JSONObject, ifMatch: String? = nil)
        throws(MBaaSError) -> TransportRequest
    {
        var headers: [(String, String)] = [("X-HTTP-Method-Override", "PATCH")]
        if let ifMatch { headers.append(("If-Match", ifMatch)) }
        return try jsonRequest(.post, bucket.objectPath(appID: appID, objectID: id), contentType: "application/json",
                               .object(changes), headers: headers)
    }

    public func getObject(_ bucket: KiiBucketAddress, id: String) throws(MBaaSError) -> TransportRequest {
        try request(.get, bucket.objectPath(appID: appID, objectID: id))
    }

    public func deleteObject(_ bucket: KiiBucketAddress, id: String, ifMatch: String? = nil) throws(MBaaSError) -> TransportRequest {
        try request(.delete, bucket.objectPath(appID: appID, objectID: id), headers: ifMatch.map { [("If-Match", $0)] } ?? [])
    }

    // MARK: Query (kii.md §4)

    /// `POST {bucket}/query` with `application/vnd.kii.QueryRequest+json`.
    public func query(_ bucket: KiiBucketAddress, _ query: KiiQueryRequest) throws(MBaaSError) -> TransportRequest {
        try jsonRequest(.post, bucket.path(appID: appID) + "/query", contentType: KiiQueryRequest.contentType, query.json)
    }

    // MARK: Bodies (kii.md §5.1)

    /// `PUT {object}/body` with the body's own Content-Type.
    public func putBody(_ bucket: KiiBucketAddress, id: String, data: Data, contentType: String) throws(MBaaSError) -> TransportRequest {
        try request(.put, bucket.objectPath(appID: appID, objectID: id) + "/body", headers: [("Content-Type", contentType)], body: data)
    }

    public func getBody(_ bucket: KiiBucketAddress, id: String) throws(MBaaSError) -> TransportRequest {
        try request(.get, bucket.objectPath(appID: appID, objectID: id) + "/body", headers: [("Accept", "*/*")])
    }

    public func deleteBody(_ bucket: KiiBucketAddress, id: String) throws(MBaaSError) -> TransportRequest {
        try request(.delete, bucket.objectPath(appID: appID, objectID: id) + "/body")
    }

    /// The body's REST URL (needs the same headers as any request; not a public link).
    public func bodyURL(_ bucket: KiiBucketAddress, id: String) -> String {
        configuration.baseURL + bucket.objectPath(appID: appID, objectID: id) + "/body"
    }

    // MARK: ACL (kii.md §6.1)

    /// `GET {resource}/acl`; `resource` is a bucket path or an object path.
    public func getACL(resource: String) throws(MBaaSError) -> TransportRequest {
        try request(.get, resource + "/acl")
    }

    /// `PUT {resource}/acl/{VERB}/{SUBJECT}` (no body).
    public func grant(resource: String, _ entry: KiiACLEntry) throws(MBaaSError) -> TransportRequest {
        try request(.put, resource + entry.pathSuffix)
    }

    /// `DELETE {resource}/acl/{VERB}/{SUBJECT}`.
    public func revoke(resource: String, _ entry: KiiACLEntry) throws(MBaaSError) -> TransportRequest {
        try request(.delete, resource + entry.pathSuffix)
    }

    // MARK: Users (kii.md §2)

    /// `POST /oauth2/token` (the SDKs' endpoint, no `Authorization` header).
    public func token(_ tokenRequest: KiiTokenRequest) throws(MBaaSError) -> TransportRequest {
        try jsonRequest(.post, "/oauth2/token", contentType: KiiTokenRequest.contentType, tokenRequest.json)
    }

    /// `POST /apps/{appID}/users`.
    public func register(_ registration: KiiRegistrationRequest) throws(MBaaSError) -> TransportRequest {
        try jsonRequest(.post, "/apps/\(percentEncodeSegment(appID))/users", contentType: KiiRegistrationRequest.contentType,
                        registration.json)
    }

    /// `POST /apps/{appID}/groups` with `{"name","owner","members"}` (kii.md §3.7).
    public func createGroup(name: String, owner: String, members: [String]) throws(MBaaSError) -> TransportRequest {
        try jsonRequest(.post, "/apps/\(percentEncodeSegment(appID))/groups",
                        contentType: "application/vnd.kii.GroupCreationRequest+json",
                        .object(["name": .string(name), "owner": .string(owner), "members": .array(members.map(JSON.string))]))
    }

    /// `GET /apps/{appID}/users/me`.
    public func me() throws(MBaaSError) -> TransportRequest {
        try request(.get, "/apps/\(percentEncodeSegment(appID))/users/me")
    }
}
