import Foundation
import MBaaSCore

/// The object whose body holds a file: a bucket and an object ID (kii.md §5). Pure.
public struct KiiBodyLocation: Sendable, Hashable {
    public var bucket: KiiBucketAddress
    public var objectID: String

    public init(bucket: KiiBucketAddress, objectID: String) {
        self.bucket = bucket
        self.objectID = objectID
    }

    /// Reads the body URL the adapter puts in ``FileReference/url``:
    /// `{baseURL}/apps/{appID}[/users|groups|things/{owner}]/buckets/{bucket}/objects/{id}/body`; `nil` for any other URL.
    public init?(url: String, configuration: KiiConfiguration) {
        let prefix = configuration.baseURL + "/apps/" + percentEncodeSegment(configuration.appID)
        guard url.hasPrefix(prefix), url.hasSuffix("/body") else { return nil }
        let middle = url.dropFirst(prefix.count).dropLast("/body".count)
        let parts = middle.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            String($0).removingPercentEncoding ?? String($0)
        }
        // [scope, owner,] "buckets", bucket, "objects", id
        guard parts.count == 4 || parts.count == 6, parts[parts.count - 2] == "objects",
              parts[parts.count - 4] == "buckets"
        else { return nil }
        let className = parts.count == 6 ? "\(parts[0])/\(parts[1])/\(parts[3])" : parts[1]
        guard let bucket = try? KiiBucketAddress(className: className), !parts[parts.count - 1].isEmpty else { return nil }
        self.init(bucket: bucket, objectID: parts[parts.count - 1])
    }
}
