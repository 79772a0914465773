import Foundation
import MBaaSCore
import MBaaSSalesforceWire

/// sObject Collections, `/composite/sobjects`: create (POST), update (PATCH), delete (DELETE `?ids=`) [doc/sdk:
/// salesforce.md "Composite and sObject Collections"].
extension SalesforceCall {
    /// One item to write: its type and id, its fields, or the error that stops it before anything is written.
    struct CollectionItem {
        var type: String
        var id: String?
        var fields: [String: Value]
        var error: MBaaSError?
    }

    static let rolledBack = SalesforceErrorItem(
        message: "Record rolled back because not all records were valid and the request was using AllOrNone header",
        errorCode: "ALL_OR_NONE_OPERATION_ROLLED_BACK")

    /// Answers 200 with one save result per record, in order, errors with `statusCode` [sdk]. With `allOrNone`, an
    /// item that fails validation fails them all: it keeps its code, the others are ALL_OR_NONE_OPERATION_ROLLED_BACK
    /// and nothing is written [sdk].
    func collection() async throws -> TransportResponse {
        let (items, allOrNone) = try await collectionItems()
        if allOrNone, items.contains(where: { $0.error != nil }) {
            return Self.json(200, .array(items.map { item in
                SalesforceSaveResult(id: nil, success: false, errors: [item.error.map(Self.item) ?? Self.rolledBack]).json(inCollection: true)
            }))
        }
        var results: [JSON] = []
        for item in items {
            if let error = item.error {
                results.append(SalesforceSaveResult(id: item.id, success: false, errors: [Self.item(error)]).json(inCollection: true))
                continue
            }
            do {
                let id = try await write(item)
                results.append(SalesforceSaveResult(id: id, success: true).json(inCollection: true))
            } catch {
                results.append(SalesforceSaveResult(id: item.id, success: false, errors: [Self.item(MBaaSError.wrap(error))]).json(inCollection: true))
            }
        }
        return Self.json(200, .array(results))
    }

    static func item(_ e: MBaaSError) -> SalesforceErrorItem { SalesforceErrorCodec.restError(for: e).item }

    /// The request's items, each checked before anything is written.
    func collectionItems() async throws -> ([CollectionItem], Bool) {
        if request.method == .delete {
            let ids = (queryItems["ids"] ?? "").split(separator: ",").map(String.init)
            guard !ids.isEmpty, ids.count <= SalesforceWire.maxCollectionSize else {
                throw MBaaSError(.invalidRequest, "between 1 and \(SalesforceWire.maxCollectionSize) ids are required", vendorCode: "EXCEEDED_ID_LIMIT")
            }
            var items: [CollectionItem] = []
            for id in ids {
                var item = CollectionItem(type: "", id: id, fields: [:])
                if let type = await typeOf(id) { item.type = type } else {
                    item.error = MBaaSError(.notFound, "entity is deleted", vendorCode: "ENTITY_IS_DELETED")
                }
                items.append(item)
            }
            return (items, queryItems["allOrNone"] == "true")
        }
        let body = try SalesforceCollectionRequest(json: .object(try jsonObject()))
        var items: [CollectionItem] = []
        for var o in body.records {
            let type = o["attributes"]?.objectValue?["type"]?.stringValue ?? ""
            let id = o["Id"]?.stringValue ?? o["id"]?.stringValue
            o["Id"] = nil
            o["id"] = nil
            var item = CollectionItem(type: type, id: id, fields: [:])
            do {
                guard SalesforceWire.isIdentifier(type) else {
                    throw MBaaSError(.invalidRequest, "Invalid or missing attributes.type", vendorCode: "INVALID_TYPE")
                }
                if request.method == .patch, id == nil {
                    throw MBaaSError(.invalidRequest, "Id not specified in an update call", vendorCode: "MISSING_ARGUMENT")
                }
                if request.method == .post, id != nil {
                    throw MBaaSError(.invalidRequest, "cannot specify Id in an insert call", vendorCode: "INVALID_FIELD")
                }
                item.fields = try SalesforceRecordCodec.fields(ofBody: o)
                if request.method == .patch, let id { _ = try await existing(type, id) }
            } catch {
                item.error = MBaaSError.wrap(error)
            }
            items.append(item)
        }
        return (items, body.allOrNone)
    }

    /// The type of a stored id, for deletes by id alone (the store keeps types apart; the org's ids carry theirs).
    func typeOf(_ id: String) async -> String? {
        await dialect.state.typeOf(id)
    }

    /// Writes one item; the id written.
    func write(_ item: CollectionItem) async throws -> String? {
        switch request.method {
        case .post:
            let record = try await owner.create(Record(className: item.type, fields: item.fields))
            if let id = record.id { await dialect.state.remember(id, type: item.type) }
            return record.id
        case .patch:
            _ = try await owner.update(className: item.type, id: item.id ?? "", .set(item.fields))
            return item.id
        default:
            _ = try await existing(item.type, item.id ?? "")
            try await owner.delete(className: item.type, id: item.id ?? "", expectedVersion: nil)
            await dialect.state.markDeleted(item.type + "/" + (item.id ?? ""))
            return item.id
        }
    }
}
