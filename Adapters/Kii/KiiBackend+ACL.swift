import Foundation
public import MBaaSCore
import MBaaSKiiWire

/// ACLs (kii.md §6): object ACLs for records, bucket ACLs for classes.
///
/// A record's ``ACL`` is written as Kii object ACL entries (see ``KiiACLMapping``): the current list is read
/// (`GET {object}/acl`) and the differences granted (`PUT {object}/acl/{VERB}/{SUBJECT}`) and revoked (`DELETE`).
/// Kii lets only the object's creator and the scope owner change an object ACL.
extension KiiBackend {
    /// The neutral ACL of a record, read from its Kii object ACL.
    public func acl(className: String, id: String) async throws -> ACL {
        let bucket = try address(className)
        return KiiACLMapping.acl(fromObjectACL: try await aclList(resource: bucket.objectPath(appID: configuration.appID, objectID: id),
                                                                  requireUser: bucket.needsUserToken))
    }

    /// The access each record grants as Kii enforces it (``KiiACLMapping/effectiveACL(object:bucket:)``): its object
    /// ACL, with read for whoever the bucket lets read every object (in app scope, by default, everyone). One request
    /// for the bucket's ACL, then one per object; an object that is gone is left out of the answer.
    public func recordACLs(className: String, ids: [String]) async throws -> [String: ACL] {
        guard !ids.isEmpty else { return [:] }
        let bucket = try address(className)
        let bucketACL = try await aclList(resource: bucket.path(appID: configuration.appID), requireUser: bucket.needsUserToken)
        var out: [String: ACL] = [:]
        for id in ids {
            let object: KiiACLList
            do {
                object = try await aclList(resource: bucket.objectPath(appID: configuration.appID, objectID: id), requireUser: bucket.needsUserToken)
            } catch let e as MBaaSError where e.kind == .notFound {
                continue
            }
            out[id] = KiiACLMapping.effectiveACL(object: object, bucket: bucketACL)
        }
        return out
    }

    /// Replaces a record's ACL.
    public func setACL(_ acl: ACL, className: String, id: String) async throws {
        let bucket = try address(className)
        try await applyObjectACL(bucket: bucket, id: id, desired: try KiiACLMapping.objectEntries(for: acl))
    }

    /// The class-level ACL of a bucket: `read` = query and read every object, `write` = create objects.
    public func classACL(className: String) async throws -> ACL {
        let bucket = try address(className)
        return KiiACLMapping.acl(fromBucketACL: try await aclList(resource: bucket.path(appID: configuration.appID),
                                                                  requireUser: bucket.needsUserToken))
    }

    /// Replaces a bucket's create, query and read entries (app-scope buckets need admin mode).
    public func setClassACL(_ acl: ACL, className: String) async throws {
        let bucket = try address(className)
        let resource = bucket.path(appID: configuration.appID)
        let current = try await aclList(resource: resource, requireUser: bucket.needsUserToken)
        let changes = KiiACLMapping.changes(
            from: current.entries, to: try KiiACLMapping.bucketEntries(for: acl),
            verbs: [.createObjectsInBucket, .queryObjectsInBucket, .readObjectsInBucket])
        try await apply(changes, resource: resource, requireUser: bucket.needsUserToken)
    }

    /// The raw Kii ACL list of a bucket or object path (relative to the API base).
    public func aclList(resource: String, requireUser: Bool = false) async throws -> KiiACLList {
        let response = try await send(try requests.getACL(resource: resource), requireUser: requireUser)
        return try KiiACLList(json: try json(response))
    }

    func applyObjectACL(bucket: KiiBucketAddress, id: String, desired: Set<KiiACLEntry>) async throws {
        let resource = bucket.objectPath(appID: configuration.appID, objectID: id)
        let current = try await aclList(resource: resource, requireUser: bucket.needsUserToken)
        let changes = KiiACLMapping.changes(from: current.entries, to: desired, verbs: KiiACLVerb.objectVerbs)
        try await apply(changes, resource: resource, requireUser: bucket.needsUserToken)
    }

    func apply(_ changes: (grants: [KiiACLEntry], revokes: [KiiACLEntry]), resource: String, requireUser: Bool) async throws {
        // Grant first, so the caller never locks itself out half-way.
        for entry in changes.grants {
            do { _ = try await send(try requests.grant(resource: resource, entry), requireUser: requireUser) }
            catch let error as MBaaSError where error.vendorCode == "ACL_ALREADY_EXISTS" { continue }
        }
        for entry in changes.revokes {
            do { _ = try await send(try requests.revoke(resource: resource, entry), requireUser: requireUser) }
            catch let error as MBaaSError where error.vendorCode == "ACL_NOT_FOUND" { continue }
        }
    }

    /// Creates a group owned by the logged-in user (kii.md §3.7) and returns its ID, for group-scope class names
    /// (`groups/{groupID}/Bucket`) and `group:{id}` ACL principals.
    public func createGroup(name: String, members: [String]) async throws -> String {
        guard let owner = userSession?.userId else { throw MBaaSError(.unauthorized, "creating a Kii group needs a logged-in user") }
        let response = try await send(try requests.createGroup(name: name, owner: owner, members: members), requireUser: true)
        guard let id = try json(response)["groupID"]?.stringValue else {
            throw MBaaSError(.decoding, "Kii group creation response lacks 'groupID'")
        }
        return id
    }
}
