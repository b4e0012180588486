"""Admin RPCs: configs, client quotas, ACLs, features, SCRAM credentials, delegation tokens.

Wire facts after Apache Kafka's message schemas (trunk, October 2024, before 4.0 dropped old
versions); declarations are our own.
"""

from ..schema import field, message

# --- IncrementalAlterConfigs (44) -----------------------------------------------------------

INCREMENTAL_ALTER_CONFIGS_REQUEST = message(
    "IncrementalAlterConfigsRequest", kind="request", api_key=44, versions="0-1", flexible="1+",
    fields=[
        field("Resources", "[]AlterConfigsResource", "0+", fields=[
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("Configs", "[]AlterableConfig", "0+", fields=[
                field("Name", "string", "0+"),
                field("ConfigOperation", "int8", "0+"),
                field("Value", "string", "0+", nullable="0+"),
            ]),
        ]),
        field("ValidateOnly", "bool", "0+"),
    ],
)

INCREMENTAL_ALTER_CONFIGS_RESPONSE = message(
    "IncrementalAlterConfigsResponse", kind="response", api_key=44, versions="0-1", flexible="1+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Responses", "[]AlterConfigsResourceResponse", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
        ]),
    ],
)

# --- DescribeConfigs (32) -------------------------------------------------------------------

DESCRIBE_CONFIGS_REQUEST = message(
    "DescribeConfigsRequest", kind="request", api_key=32, versions="0-4", flexible="4+",
    fields=[
        field("Resources", "[]DescribeConfigsResource", "0+", fields=[
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("ConfigurationKeys", "[]string", "0+", nullable="0+"),
        ]),
        field("IncludeSynonyms", "bool", "1+", default=False),
        field("IncludeDocumentation", "bool", "3+", default=False),
    ],
)

DESCRIBE_CONFIGS_RESPONSE = message(
    "DescribeConfigsResponse", kind="response", api_key=32, versions="0-4", flexible="4+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Results", "[]DescribeConfigsResult", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("Configs", "[]DescribeConfigsResourceResult", "0+", fields=[
                field("Name", "string", "0+"),
                field("Value", "string", "0+", nullable="0+"),
                field("ReadOnly", "bool", "0+"),
                field("IsDefault", "bool", "0"),  # v1+ carries ConfigSource instead
                field("ConfigSource", "int8", "1+", default=-1, ignorable=True),
                field("IsSensitive", "bool", "0+"),
                field("Synonyms", "[]DescribeConfigsSynonym", "1+", ignorable=True, fields=[
                    field("Name", "string", "1+"),
                    field("Value", "string", "1+", nullable="0+"),
                    field("Source", "int8", "1+"),
                ]),
                field("ConfigType", "int8", "3+", default=0, ignorable=True),
                field("Documentation", "string", "3+", nullable="0+", ignorable=True),
            ]),
        ]),
    ],
)

# --- Client quotas: AlterClientQuotas (49), DescribeClientQuotas (48) -----------------------

_QUOTA_ENTITY = [
    field("EntityType", "string", "0+"),
    field("EntityName", "string", "0+", nullable="0+"),
]

ALTER_CLIENT_QUOTAS_REQUEST = message(
    "AlterClientQuotasRequest", kind="request", api_key=49, versions="0-1", flexible="1+",
    fields=[
        field("Entries", "[]EntryData", "0+", fields=[
            field("Entity", "[]EntityData", "0+", fields=_QUOTA_ENTITY),
            field("Ops", "[]OpData", "0+", fields=[
                field("Key", "string", "0+"),
                field("Value", "float64", "0+"),
                field("Remove", "bool", "0+"),
            ]),
        ]),
        field("ValidateOnly", "bool", "0+"),
    ],
)

ALTER_CLIENT_QUOTAS_RESPONSE = message(
    "AlterClientQuotasResponse", kind="response", api_key=49, versions="0-1", flexible="1+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Entries", "[]EntryData", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("Entity", "[]EntityData", "0+", fields=_QUOTA_ENTITY),
        ]),
    ],
)

DESCRIBE_CLIENT_QUOTAS_REQUEST = message(
    "DescribeClientQuotasRequest", kind="request", api_key=48, versions="0-1", flexible="1+",
    fields=[
        field("Components", "[]ComponentData", "0+", fields=[
            field("EntityType", "string", "0+"),
            field("MatchType", "int8", "0+"),
            field("Match", "string", "0+", nullable="0+"),
        ]),
        field("Strict", "bool", "0+"),
    ],
)

DESCRIBE_CLIENT_QUOTAS_RESPONSE = message(
    "DescribeClientQuotasResponse", kind="response", api_key=48, versions="0-1", flexible="1+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("Entries", "[]EntryData", "0+", nullable="0+", fields=[
            field("Entity", "[]EntityData", "0+", fields=_QUOTA_ENTITY),
            field("Values", "[]ValueData", "0+", fields=[
                field("Key", "string", "0+"),
                field("Value", "float64", "0+"),
            ]),
        ]),
    ],
)

# --- ACLs: CreateAcls (30), DeleteAcls (31), DescribeAcls (29) ------------------------------
# Pattern type 3 = LITERAL, the only pattern before v1 added the field.

CREATE_ACLS_REQUEST = message(
    "CreateAclsRequest", kind="request", api_key=30, versions="0-3", flexible="2+",
    fields=[
        field("Creations", "[]AclCreation", "0+", fields=[
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("ResourcePatternType", "int8", "1+", default=3),
            field("Principal", "string", "0+"),
            field("Host", "string", "0+"),
            field("Operation", "int8", "0+"),
            field("PermissionType", "int8", "0+"),
        ]),
    ],
)

CREATE_ACLS_RESPONSE = message(
    "CreateAclsResponse", kind="response", api_key=30, versions="0-3", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Results", "[]AclCreationResult", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
        ]),
    ],
)

DELETE_ACLS_REQUEST = message(
    "DeleteAclsRequest", kind="request", api_key=31, versions="0-3", flexible="2+",
    fields=[
        field("Filters", "[]DeleteAclsFilter", "0+", fields=[
            field("ResourceTypeFilter", "int8", "0+"),
            field("ResourceNameFilter", "string", "0+", nullable="0+"),
            field("PatternTypeFilter", "int8", "1+", default=3),
            field("PrincipalFilter", "string", "0+", nullable="0+"),
            field("HostFilter", "string", "0+", nullable="0+"),
            field("Operation", "int8", "0+"),
            field("PermissionType", "int8", "0+"),
        ]),
    ],
)

DELETE_ACLS_RESPONSE = message(
    "DeleteAclsResponse", kind="response", api_key=31, versions="0-3", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("FilterResults", "[]DeleteAclsFilterResult", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("MatchingAcls", "[]DeleteAclsMatchingAcl", "0+", fields=[
                field("ErrorCode", "int16", "0+"),
                field("ErrorMessage", "string", "0+", nullable="0+"),
                field("ResourceType", "int8", "0+"),
                field("ResourceName", "string", "0+"),
                field("PatternType", "int8", "1+", default=3),
                field("Principal", "string", "0+"),
                field("Host", "string", "0+"),
                field("Operation", "int8", "0+"),
                field("PermissionType", "int8", "0+"),
            ]),
        ]),
    ],
)

DESCRIBE_ACLS_REQUEST = message(
    "DescribeAclsRequest", kind="request", api_key=29, versions="0-3", flexible="2+",
    fields=[
        field("ResourceTypeFilter", "int8", "0+"),
        field("ResourceNameFilter", "string", "0+", nullable="0+"),
        field("PatternTypeFilter", "int8", "1+", default=3),
        field("PrincipalFilter", "string", "0+", nullable="0+"),
        field("HostFilter", "string", "0+", nullable="0+"),
        field("Operation", "int8", "0+"),
        field("PermissionType", "int8", "0+"),
    ],
)

DESCRIBE_ACLS_RESPONSE = message(
    "DescribeAclsResponse", kind="response", api_key=29, versions="0-3", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("Resources", "[]DescribeAclsResource", "0+", fields=[
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("PatternType", "int8", "1+", default=3),
            field("Acls", "[]AclDescription", "0+", fields=[
                field("Principal", "string", "0+"),
                field("Host", "string", "0+"),
                field("Operation", "int8", "0+"),
                field("PermissionType", "int8", "0+"),
            ]),
        ]),
    ],
)

# --- UpdateFeatures (57) --------------------------------------------------------------------

UPDATE_FEATURES_REQUEST = message(
    "UpdateFeaturesRequest", kind="request", api_key=57, versions="0-1", flexible="0+",
    fields=[
        field("timeoutMs", "int32", "0+", default=60000),  # Kafka spells this one in camelCase
        field("FeatureUpdates", "[]FeatureUpdateKey", "0+", fields=[
            field("Feature", "string", "0+"),
            field("MaxVersionLevel", "int16", "0+"),
            field("AllowDowngrade", "bool", "0"),  # replaced by UpgradeType in v1
            field("UpgradeType", "int8", "1+", default=1),
        ]),
        field("ValidateOnly", "bool", "1+", default=False),
    ],
)

UPDATE_FEATURES_RESPONSE = message(
    "UpdateFeaturesResponse", kind="response", api_key=57, versions="0-1", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("Results", "[]UpdatableFeatureResult", "0+", fields=[
            field("Feature", "string", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
        ]),
    ],
)

# --- AlterUserScramCredentials (51) ---------------------------------------------------------

ALTER_USER_SCRAM_CREDENTIALS_REQUEST = message(
    "AlterUserScramCredentialsRequest", kind="request", api_key=51, versions="0", flexible="0+",
    fields=[
        field("Deletions", "[]ScramCredentialDeletion", "0+", fields=[
            field("Name", "string", "0+"),
            field("Mechanism", "int8", "0+"),
        ]),
        field("Upsertions", "[]ScramCredentialUpsertion", "0+", fields=[
            field("Name", "string", "0+"),
            field("Mechanism", "int8", "0+"),
            field("Iterations", "int32", "0+"),
            field("Salt", "bytes", "0+"),
            field("SaltedPassword", "bytes", "0+"),
        ]),
    ],
)

ALTER_USER_SCRAM_CREDENTIALS_RESPONSE = message(
    "AlterUserScramCredentialsResponse", kind="response", api_key=51, versions="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Results", "[]AlterUserScramCredentialsResult", "0+", fields=[
            field("User", "string", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
        ]),
    ],
)

# --- CreateDelegationToken (38) -------------------------------------------------------------

CREATE_DELEGATION_TOKEN_REQUEST = message(
    "CreateDelegationTokenRequest", kind="request", api_key=38, versions="0-3", flexible="2+",
    fields=[
        field("OwnerPrincipalType", "string", "3+", nullable="3+"),
        field("OwnerPrincipalName", "string", "3+", nullable="3+"),
        field("Renewers", "[]CreatableRenewers", "0+", fields=[
            field("PrincipalType", "string", "0+"),
            field("PrincipalName", "string", "0+"),
        ]),
        field("MaxLifetimeMs", "int64", "0+"),
    ],
)

CREATE_DELEGATION_TOKEN_RESPONSE = message(
    "CreateDelegationTokenResponse", kind="response", api_key=38, versions="0-3", flexible="2+",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("PrincipalType", "string", "0+"),
        field("PrincipalName", "string", "0+"),
        field("TokenRequesterPrincipalType", "string", "3+"),
        field("TokenRequesterPrincipalName", "string", "3+"),
        field("IssueTimestampMs", "int64", "0+"),
        field("ExpiryTimestampMs", "int64", "0+"),
        field("MaxTimestampMs", "int64", "0+"),
        field("TokenId", "string", "0+"),
        field("Hmac", "bytes", "0+"),
        field("ThrottleTimeMs", "int32", "0+"),  # last on the wire in every version
    ],
)
