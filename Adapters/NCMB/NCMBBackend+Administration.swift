import Foundation
public import MBaaSCore

/// The user directory as the app reads it (``MBaaSCore/BackendAdministration``), for migrations out of NCMB.
///
/// NCMB has no administrative listing in its REST API; users are objects on `/users` under their own ACLs, so
/// these calls see the users the caller may read (every user whose ACL grants public read, NCMB's usual setting,
/// or the logged-in user's own) [doc: ncmb.md §1.6 "Query users with GET /users?where=…"].
/// - ``listUsers(after:limit:)``: `GET /users?order=objectId&limit=N&where={"objectId":{"$gt":cursor}}`, a keyset
///   on `objectId` (no `skip` limit); `userName` → `username`, `mailAddress` → `email`, `mailAddressConfirm` →
///   `emailVerified`; `authData`, `sessionToken`, `password`, `temporaryPassword` are never kept. Roles are filled
///   from ``roleNames(ofUser:)``-style membership by ``listRoles()`` (one list for all users).
/// - ``listRoles()``: every role the caller may read, with its `belongUser` members (`$relatedTo`).
/// - ``findUser(username:)``: `GET /users?where={"userName":…}&limit=1`.
/// Importing users and roles is `unsupported`: NCMB users sign up themselves.
extension NCMBBackend {
    public func listUsers(after cursor: String?, limit: Int) async throws -> DirectoryUserPage {
        guard limit > 0 else { throw MBaaSError(.invalidRequest, "limit must be positive, got \(limit)") }
        let page = min(limit, NCMBQuery.maxLimit)
        var condition = NCMBWhere()
        if let cursor { condition.entries.append(.init(key: "objectId", constraint: .operators([.gt(.string(cursor))]))) }
        let results = try await find(className: "_User", NCMBQuery(where: condition.isEmpty ? nil : condition,
                                                                   order: ["objectId"], limit: page))
        let users = try results.results.map(Self.directoryUser)
        return DirectoryUserPage(users: users, nextCursor: users.count == page ? users.last?.id : nil)
    }

    public func listRoles() async throws -> [DirectoryRole] {
        var roles: [DirectoryRole] = []
        var skip = 0
        while true {
            let page = try await find(className: "role", NCMBQuery(order: ["roleName"], limit: NCMBQuery.maxLimit,
                                                                   skip: skip == 0 ? nil : skip))
            for object in page.results {
                guard let id = object["objectId"]?.stringValue, let name = object["roleName"]?.stringValue else { continue }
                let members = try await users(inRole: id).compactMap(\.id)
                let acl = try object["acl"].flatMap { a throws(MBaaSError) in a.isNull ? nil : try NCMBCodec.decodeACL(a) }
                roles.append(DirectoryRole(name: name, id: id, users: members.sorted(), acl: acl))
            }
            if page.results.count < NCMBQuery.maxLimit { break }
            skip += page.results.count
        }
        return roles
    }

    public func findUser(username: String) async throws -> DirectoryUser? {
        let results = try await find(className: "_User", NCMBQuery(
            where: NCMBWhere(entries: [.init(key: "userName", constraint: .equals(.string(username)))]), limit: 1))
        return try results.results.first.map(Self.directoryUser)
    }

    static func directoryUser(_ object: JSONObject) throws(MBaaSError) -> DirectoryUser {
        guard let id = object["objectId"]?.stringValue else { throw MBaaSError(.decoding, "user without objectId") }
        var fields: [String: Value] = [:]
        for (key, value) in object where !value.isNull {
            switch key {
            case "objectId", "userName", "mailAddress", "mailAddressConfirm", "createDate", "updateDate", "acl",
                 "authData", "sessionToken", "password", "temporaryPassword":
                continue
            default: fields[key] = try NCMBCodec.decode(value, path: key)
            }
        }
        return DirectoryUser(
            id: id, username: object["userName"]?.stringValue, email: object["mailAddress"]?.stringValue,
            emailVerified: object["mailAddressConfirm"]?.boolValue,
            createdAt: object["createDate"]?.stringValue.flatMap(ISO8601.parse),
            updatedAt: object["updateDate"]?.stringValue.flatMap(ISO8601.parse),
            acl: try object["acl"].flatMap { a throws(MBaaSError) in a.isNull ? nil : try NCMBCodec.decodeACL(a) },
            fields: fields)
    }
}
