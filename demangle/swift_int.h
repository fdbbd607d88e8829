/* SPDX-License-Identifier: MIT */
/* Swift demangler internals: the bounded node tree the parser builds and the printer reads. */
#ifndef FAULTLINE_DEMANGLE_SWIFT_INT_H
#define FAULTLINE_DEMANGLE_SWIFT_INT_H

#include <stddef.h>
#include <stdint.h>

/* Node kinds (the names follow Swift's Demangle::Node::Kind, so that the grammar in
 * docs/ABI/Mangling.rst reads across). */
#define SW_KINDS(X) \
    X(None) X(Global) X(Suffix) X(Type) X(Module) X(Identifier) X(Class) X(Structure) X(Enum) \
    X(Protocol) X(TypeAlias) X(OtherNominalType) X(BoundGenericClass) X(BoundGenericStructure) \
    X(BoundGenericEnum) X(BoundGenericProtocol) X(BoundGenericTypeAlias) \
    X(BoundGenericOtherNominalType) X(BoundGenericFunction) X(TypeList) X(Function) X(Variable) \
    X(Subscript) X(Constructor) X(Allocator) X(Destructor) X(Deallocator) X(IsolatedDeallocator) \
    X(IVarInitializer) X(IVarDestroyer) X(Initializer) X(ExplicitClosure) X(ImplicitClosure) \
    X(DefaultArgumentInitializer) X(PropertyWrapperBackingInitializer) \
    X(PropertyWrapperInitFromProjectedValue) X(Macro) X(GenericTypeParamDecl) X(Extension) \
    X(Static) X(LabelList) X(EmptyList) X(FirstElementMarker) X(VariadicMarker) X(Tuple) \
    X(TupleElement) X(TupleElementName) X(FunctionType) X(NoEscapeFunctionType) \
    X(AutoClosureType) X(EscapingAutoClosureType) X(ThinFunctionType) X(UncurriedFunctionType) \
    X(CFunctionPointer) X(ObjCBlock) X(EscapingObjCBlock) X(ArgumentTuple) X(ReturnType) \
    X(ThrowsAnnotation) X(TypedThrowsAnnotation) X(AsyncAnnotation) X(ConcurrentFunctionType) \
    X(GlobalActorFunctionType) X(IsolatedAnyFunctionType) X(DifferentiableFunctionType) \
    X(SendingResultFunctionType) X(InOut) X(Shared) X(Owned) X(Isolated) X(Sending) \
    X(NoDerivative) X(CompileTimeConst) X(Metatype) X(ExistentialMetatype) X(MetatypeRepresentation) \
    X(Weak) X(Unowned) X(Unmanaged) X(DynamicSelf) X(ErrorType) X(SILBoxType) \
    X(ProtocolList) X(ProtocolListWithClass) X(ProtocolListWithAnyObject) X(BuiltinTypeName) \
    X(DependentGenericParamType) X(DependentMemberType) X(DependentAssociatedTypeRef) \
    X(DependentGenericType) X(DependentGenericSignature) X(DependentGenericParamCount) \
    X(DependentGenericConformanceRequirement) X(DependentGenericSameTypeRequirement) \
    X(DependentGenericLayoutRequirement) X(Number) X(Index) X(LocalDeclName) X(PrivateDeclName) \
    X(RelatedEntityDeclName) X(InfixOperator) X(PrefixOperator) X(PostfixOperator) \
    X(Getter) X(Setter) X(GlobalGetter) X(MaterializeForSet) X(WillSet) X(DidSet) \
    X(ReadAccessor) X(ModifyAccessor) X(InitAccessor) X(Read2Accessor) X(Modify2Accessor) \
    X(OwningMutableAddressor) X(NativeOwningMutableAddressor) X(NativePinningMutableAddressor) \
    X(UnsafeMutableAddressor) X(OwningAddressor) X(NativeOwningAddressor) \
    X(NativePinningAddressor) X(UnsafeAddressor) \
    X(TypeMangling) X(TypeMetadata) X(TypeMetadataAccessFunction) X(TypeMetadataLazyCache) \
    X(TypeMetadataDemanglingCache) X(FullTypeMetadata) X(TypeMetadataInstantiationFunction) \
    X(TypeMetadataInstantiationCache) X(TypeMetadataSingletonInitializationCache) \
    X(TypeMetadataCompletionFunction) X(Metaclass) X(NominalTypeDescriptor) \
    X(ClassMetadataBaseOffset) X(ProtocolDescriptor) X(GenericTypeMetadataPattern) \
    X(MethodLookupFunction) X(PropertyDescriptor) X(ExtensionDescriptor) \
    X(ProtocolConformanceDescriptor) X(ReflectionMetadataAssocTypeDescriptor) \
    X(ReflectionMetadataFieldDescriptor) X(ReflectionMetadataBuiltinDescriptor) \
    X(ProtocolSelfConformanceDescriptor) X(OpaqueTypeDescriptor) X(ObjCMetadataUpdateFunction) \
    X(ObjCResilientClassStub) X(FullObjCResilientClassStub) X(MetadataInstantiationCache) \
    X(CanonicalSpecializedGenericMetaclass) X(NoncanonicalSpecializedGenericTypeMetadata) \
    X(CanonicalSpecializedGenericTypeMetadataAccessFunction) X(ModuleDescriptor) \
    X(AnonymousDescriptor) X(ValueWitness) X(ValueWitnessTable) X(FieldOffset) X(Directness) \
    X(ProtocolWitnessTable) X(ProtocolWitnessTablePattern) X(GenericProtocolWitnessTable) \
    X(GenericProtocolWitnessTableInstantiationFunction) X(ResilientProtocolWitnessTable) \
    X(ProtocolWitnessTableAccessor) X(LazyProtocolWitnessTableAccessor) \
    X(LazyProtocolWitnessTableCacheVariable) X(AssociatedTypeMetadataAccessor) \
    X(AssociatedTypeWitnessTableAccessor) X(BaseWitnessTableAccessor) \
    X(ProtocolSelfConformanceWitnessTable) X(ProtocolConformance) X(EnumCase) \
    X(OutlinedCopy) X(OutlinedConsume) X(OutlinedRetain) X(OutlinedRelease) \
    X(OutlinedInitializeWithTake) X(OutlinedInitializeWithCopy) X(OutlinedAssignWithTake) \
    X(OutlinedAssignWithCopy) X(OutlinedDestroy) X(OutlinedInitializeWithTakeNoValueWitness) \
    X(OutlinedInitializeWithCopyNoValueWitness) X(OutlinedAssignWithTakeNoValueWitness) \
    X(OutlinedAssignWithCopyNoValueWitness) X(OutlinedDestroyNoValueWitness) \
    X(OutlinedVariable) X(OutlinedReadOnlyObject) X(OutlinedBridgedMethod) \
    X(CurryThunk) X(DispatchThunk) X(MethodDescriptor) X(ObjCAttribute) X(NonObjCAttribute) \
    X(DynamicAttribute) X(DirectMethodReferenceAttribute) X(VTableAttribute) X(DistributedThunk) \
    X(DistributedAccessor) X(PartialApplyForwarder) X(PartialApplyObjCForwarder) \
    X(MergedFunction) X(DynamicallyReplaceableFunctionVar) X(DynamicallyReplaceableFunctionKey) \
    X(DynamicallyReplaceableFunctionImpl) X(AsyncAwaitResumePartialFunction) \
    X(AsyncSuspendResumePartialFunction) X(AsyncFunctionPointer) X(CoroutineContinuationPrototype) \
    X(VTableThunk) X(ProtocolWitness) X(ProtocolSelfConformanceWitness) \
    X(ReabstractionThunk) X(ReabstractionThunkHelper) X(ReabstractionThunkHelperWithSelf) \
    X(GenericSpecialization) X(GenericSpecializationNotReAbstracted) \
    X(GenericSpecializationInResilienceDomain) X(GenericSpecializationPrespecialized) \
    X(InlinedGenericFunction) X(GenericPartialSpecialization) \
    X(GenericPartialSpecializationNotReAbstracted) X(GenericSpecializationParam) \
    X(SpecializationPassID) X(IsSerialized) X(MetatypeParamsRemoved) X(AsyncRemoved) \
    X(DroppedArgument) X(FunctionSignatureSpecialization) X(FunctionSignatureSpecializationParam) \
    X(FunctionSignatureSpecializationReturn) X(FunctionSignatureSpecializationParamKind) \
    X(FunctionSignatureSpecializationParamPayload) \
    X(BackDeploymentThunk) X(BackDeploymentFallback) X(HasSymbolQuery) \
    X(AccessibleFunctionRecord) X(ProtocolRequirementsBaseDescriptor) \
    X(AssociatedTypeDescriptor) X(AssociatedConformanceDescriptor) \
    X(DefaultAssociatedConformanceAccessor) X(BaseConformanceDescriptor) \
    X(DefaultAssociatedTypeMetadataAccessor) X(ProtocolDescriptorRecord) \
    X(ProtocolConformanceDescriptorRecord) X(NominalTypeDescriptorRecord) \
    X(OpaqueTypeDescriptorRecord) X(OpaqueReturnType) X(OpaqueReturnTypeOf) X(OpaqueType) \
    X(OpaqueReturnTypeIndex) X(KeyPathGetterThunkHelper) X(KeyPathSetterThunkHelper) \
    X(KeyPathEqualsThunkHelper) X(KeyPathHashThunkHelper) X(ConcreteProtocolConformance) \
    X(DependentProtocolConformanceRoot) X(DependentProtocolConformanceInherited) \
    X(DependentProtocolConformanceAssociated) X(ProtocolConformanceRefInTypeModule) \
    X(ProtocolConformanceRefInProtocolModule) X(ProtocolConformanceRefInOtherModule) \
    X(RetroactiveConformance) X(TypeSymbolicReference) \
    X(ImplFunctionType) X(ImplConvention) X(ImplFunctionConvention) \
    X(ImplFunctionConventionName) X(ImplFunctionAttribute) X(ImplEscaping) \
    X(ImplErasedIsolation) X(ImplSendingResult) X(ImplCoroutineKind) \
    X(ImplDifferentiabilityKind) X(ImplParameter) X(ImplResult) X(ImplYield) X(ImplErrorResult) \
    X(ImplParameterResultDifferentiability) X(ImplParameterSending) X(ImplPatternSubstitutions) \
    X(ImplInvocationSubstitutions) X(ConstrainedExistential) \
    X(ConstrainedExistentialRequirementList) X(ConstrainedExistentialSelf) \
    X(AssociatedTypeRef) X(SugaredOptional) X(SugaredArray) X(SugaredDictionary) \
    X(SugaredParen) X(UnknownIndex) X(ObjCAsyncCompletionHandlerImpl) \
    X(PredefinedObjCAsyncCompletionHandlerImpl) X(LocalTypeUnknownContext) \
    X(MacroExpansionUniqueName) X(FreestandingMacroExpansion) X(PeerAttachedMacroExpansion) \
    X(MemberAttachedMacroExpansion) X(AccessorAttachedMacroExpansion) \
    X(MemberAttributeAttachedMacroExpansion) X(ConformanceAttachedMacroExpansion) \
    X(ExtensionAttachedMacroExpansion) X(BodyAttachedMacroExpansion) \
    X(PreambleAttachedMacroExpansion) X(MacroExpansionLoc) X(ReflectionMetadataSuperclassDescriptor) \
    X(ProtocolWitnessTableAccessorUnused) X(AutoDiffFunction) X(AutoDiffDerivativeVTableThunk) \
    X(DifferentiabilityWitness) X(AutoDiffFunctionKind) X(IndexSubset) \
    X(AutoDiffSubsetParametersThunk) X(AutoDiffSelfReorderingReabstractionThunk) \
    X(TypeMetadataLazyCacheOld) X(ClangType) X(PropertyWrapperInitFromProjected) X(AssocTypePath) X(LifetimeDependence) X(SelfLifetimeDependence) X(SILBoxTypeWithLayout) X(SILBoxLayout) X(SILBoxMutableField) X(SILBoxImmutableField) X(DependentAssociatedConformance) X(LAST)

#define SW_ENUM(k) SW_##k,
enum sw_kind { SW_KINDS(SW_ENUM) };
#undef SW_ENUM

/* Limits: a name that needs more is declined (the caller shows it raw). */
enum {
    SW_MAX_NODES = 3072,
    SW_MAX_CELLS = 6144,
    SW_MAX_STACK = 512,
    SW_MAX_SUBST = 1024,
    SW_POOL = 8192,
    SW_MAX_WORDS = 26,
    SW_MAX_DEPTH = 256, /* recursion of the printer and of the old-scheme parser */
};

typedef struct {
    uint16_t kind;
    uint16_t nkids;
    int32_t head, tail; /* the list of child cells (-1: none); a child may have many parents */
    const char *text;   /* into the symbol or the pool; not NUL-terminated */
    uint32_t tlen;
    uint64_t index;
} sw_node;

typedef struct {
    int32_t node, next;
} sw_cell;

typedef struct {
    const char *s;
    size_t n, pos;
    int fail;
    int old_fn_mangling; /* _T0: argument labels live in the tuple */
    int nn, nc, sp, nsubst, nwords, npool;
    sw_node nodes[SW_MAX_NODES];
    sw_cell cells[SW_MAX_CELLS];
    int32_t stack[SW_MAX_STACK];
    int32_t subst[SW_MAX_SUBST];
    const char *words[SW_MAX_WORDS];
    uint32_t wlen[SW_MAX_WORDS];
    char pool[SW_POOL];
} sw_ctx;

/* Everything declared below is NOT AS-SAFE (the CLI only) and thread-safe: all state lives in
 * the caller's sw_ctx.
 *
 * Tree construction (swift_parse.c). All return -1 on failure (and set c->fail for
 * exhaustion), and accept -1 arguments (propagating the failure). */
int sw_mk(sw_ctx *c, int kind);
int sw_mk_text(sw_ctx *c, int kind, const char *t, size_t n);
int sw_mk_index(sw_ctx *c, int kind, uint64_t idx);
int sw_add(sw_ctx *c, int parent, int child);
int sw_with(sw_ctx *c, int kind, int a);
int sw_with2(sw_ctx *c, int kind, int a, int b);
int sw_child(const sw_ctx *c, int n, unsigned i);
int sw_kind_of(const sw_ctx *c, int n);
const char *sw_pool_put(sw_ctx *c, const char *t, size_t n);

/* Swift's Punycode variant into UTF-8; 0 when malformed or out[] is too small. */
int sw_punycode_utf8(const char *in, size_t n, char *out, size_t cap, size_t *olen);

/* Parses c->s[0..n) (the part after the prefix) into a Global node, or -1. */
int sw_parse_new(sw_ctx *c);
/* The old (_T, Swift 1-3) scheme: parses c->s[0..n) (after "_T"), or -1. */
int sw_parse_old(sw_ctx *c);

/* Printer options (a subset of Swift's DemangleOptions). */
typedef struct {
    int simplified;
    /* demangles a symbol found inside a name (specialization payloads), or NULL */
    long (*nested)(const char *sym, char *out, size_t cap, int simplified);
} sw_opts;

/* Prints node `root` into out[0..cap); returns the full length it would have had, or -1 if
 * the tree is malformed or the work bound was hit. */
long sw_print(const sw_ctx *c, int root, char *out, size_t cap, const sw_opts *o);

#endif
