public import MBaaSCore

/// What a configuration asks of its remote, checked when a replica is created or its configuration replaced
/// (`mbaas sync init`), and the ``ReplicaPolicy/refreshScope`` filter of sync down.
extension ReplicaBackend {
    /// Refuses a configuration the remote cannot serve, naming the class, the field or member, and the remote's reason
    /// (`invalidRequest`), before anything is written:
    /// - a declared field type (``ReplicaPolicy/fields``) other than `string`, `int`, `double`, `bool` that the remote
    ///   does not declare as ``MBaaSCore/Capabilities/Feature/valueType(_:)``;
    /// - a `refreshScope` of `user` or `group` on a remote without per-record ACLs
    ///   (``MBaaSCore/Capabilities/Feature/acl``) or without users (``MBaaSCore/Capabilities/Feature/auth``).
    ///
    /// Only classes whose records reach the remote (`localAndServer`) are checked; `localOnly` ones stay on the device.
    public nonisolated static func check(_ configuration: ReplicaConfiguration, against remote: any Backend) throws(MBaaSError) {
        let caps = remote.capabilities
        let name = remote.adapterName
        var policies = configuration.classes.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        policies.append(("default", configuration.defaultPolicy))
        for (className, policy) in policies where policy.persistence == .localAndServer {
            for (field, type) in policy.fields.sorted(by: { $0.key < $1.key }) where !["string", "int", "double", "bool"].contains(type) {
                let feature = Capabilities.Feature.valueType(type)
                if !caps.has(feature) {
                    let reason = caps.note(for: feature).map { ": \($0)" } ?? ""
                    throw MBaaSError(.invalidRequest, "configuration: class '\(className)': field '\(field)' is declared \(type), which the remote (\(name)) cannot hold\(reason); declare another type or make the class localOnly")
                }
            }
            if policy.refreshScope != .all {
                for feature: Capabilities.Feature in [.acl, .auth] where !caps.has(feature) {
                    let reason = caps.note(for: feature).map { ": \($0)" } ?? ""
                    throw MBaaSError(.invalidRequest, "configuration: class '\(className)': refreshScope \(policy.refreshScope.rawValue) selects records by their ACLs and user, and the remote (\(name)) has no \(feature.rawValue == "acl" ? "per-record ACLs" : "users")\(reason); use refreshScope all (with a 'where')")
                }
            }
        }
    }

    /// Whose records sync down keeps for a class (`nil`: every one, `refreshScope` `all`).
    struct ScopeFilter: Sendable {
        var scope: ReplicaPolicy.RefreshScope
        var user: String
        var roles: [String]
        var groups: [String]

        func keeps(_ acl: ACL?) -> Bool {
            guard let acl else { return false }   // a public record is nobody's own, nor a group's
            if acl[.user(user)].write { return true }
            guard scope == .group else { return false }
            func grants(_ principal: ACL.Principal) -> Bool { acl[principal].read || acl[principal].write }
            return roles.contains { grants(.role($0)) } || groups.contains { grants(.group($0)) }
        }
    }

    /// The filter of a class's refreshScope: the logged-in user (and, for `group`, their roles and groups, asked of
    /// the remote once per sync down). `unauthorized` when nobody is logged in.
    func scopeFilter(_ className: String) async throws -> ScopeFilter? {
        let scope = policy(className).refreshScope
        guard scope != .all else { return nil }
        guard let session = await remote.session else {
            throw MBaaSError(.unauthorized, "class '\(className)': refreshScope \(scope.rawValue) mirrors the logged-in user's records: log in through the replica first (mbaas auth login replica:PATH)")
        }
        guard scope == .group else { return ScopeFilter(scope: scope, user: session.userId, roles: [], groups: []) }
        let user = try await withRetry { try await remote.currentUser() }
        return ScopeFilter(scope: scope, user: session.userId, roles: user.roles, groups: user.groups)
    }

    /// The records of a page the filter keeps (their ACLs read with ``MBaaSCore/ObjectStore/recordACLs(className:ids:)``
    /// where the remote reads records without them).
    func scoped(_ records: [MBaaSCore.Record], className: String, filter: ScopeFilter?) async throws -> [MBaaSCore.Record] {
        guard let filter, !records.isEmpty else { return records }
        var acls: [String: ACL] = [:]
        if remote.capabilities.has(.aclRead) {
            let ids = records.compactMap(\.id)
            acls = try await withRetry { try await remote.recordACLs(className: className, ids: ids) }
        }
        return records.filter { r in filter.keeps(r.id.flatMap { acls[$0] } ?? r.acl) }
    }
}

extension ReplicaPolicy {
    /// Refuses a record whose declared field (``fields``) holds a value of another type (`invalidRequest`); `null`
    /// and absent values pass, an `int` passes as a `double`, a whole `double` as an `int`.
    func checkTypes(_ values: [String: Value], className: String) throws(MBaaSError) {
        for (field, type) in fields {
            guard let value = values[field], value != .null else { continue }
            let actual = value.typeName
            if actual == type || (type == "double" && actual == "int") || (type == "int" && actual == "double" && value.intValue != nil) { continue }
            throw MBaaSError(.invalidRequest, "\(className).\(field): declared \(type) in the replica's configuration, got \(actual)")
        }
    }
}
