// A move-only callable wrapper with a small inline buffer, so that scheduling an event or
// registering a completion callback does not allocate when the callable is small (a lambda that
// captures a few pointers and integers). Larger callables, and callables whose move constructor may
// throw, are stored on the heap instead; they still work, only slower.
//
// Unlike std::function it is move-only (so it can hold move-only captures) and moving a small
// trivially copyable callable is a plain memcpy of the buffer.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace stepsim::engine {

template <typename Signature, std::size_t Capacity = 48>
class InlineFunction;

template <typename R, typename... Args, std::size_t Capacity>
class InlineFunction<R(Args...), Capacity> {
  template <typename F>
  static constexpr bool kFitsInline =
      sizeof(F) <= Capacity &&
      alignof(F) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<F>;
  template <typename F>
  static constexpr bool kTrivial =
      std::is_trivially_copyable_v<F>&& std::is_trivially_destructible_v<F>;

 public:
  InlineFunction() = default;

  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, InlineFunction> &&
                                        std::is_invocable_r_v<R, D&, Args...>>>
  InlineFunction(F&& f) {  // NOLINT(google-explicit-constructor): implicit like std::function
    if constexpr (kFitsInline<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      invoke_ = &invoke_inline<D>;
      if constexpr (!kTrivial<D>) manage_ = &manage_inline<D>;
    } else {
      D* heap = new D(std::forward<F>(f));
      ::new (static_cast<void*>(storage_)) D*(heap);
      invoke_ = &invoke_heap<D>;
      manage_ = &manage_heap<D>;
    }
  }

  InlineFunction(InlineFunction&& other) noexcept { take(other); }
  InlineFunction& operator=(InlineFunction&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  InlineFunction(const InlineFunction&) = delete;
  InlineFunction& operator=(const InlineFunction&) = delete;
  ~InlineFunction() { reset(); }

  // Destroys the held callable, leaving this empty.
  void reset() {
    if (manage_ != nullptr) manage_(Op::kDestroy, storage_, nullptr);
    invoke_ = nullptr;
    manage_ = nullptr;
  }

  explicit operator bool() const { return invoke_ != nullptr; }

  // Calls the held callable; calling an empty InlineFunction is a bug.
  R operator()(Args... args) { return invoke_(storage_, std::forward<Args>(args)...); }

 private:
  enum class Op { kMove, kDestroy };
  using Invoke = R (*)(std::byte*, Args&&...);
  using Manage = void (*)(Op, std::byte* self, std::byte* from);

  template <typename D>
  static D* as(std::byte* p) {
    return std::launder(reinterpret_cast<D*>(p));
  }
  template <typename D>
  static R invoke_inline(std::byte* p, Args&&... args) {
    return (*as<D>(p))(std::forward<Args>(args)...);
  }
  template <typename D>
  static R invoke_heap(std::byte* p, Args&&... args) {
    return (**as<D*>(p))(std::forward<Args>(args)...);
  }
  template <typename D>
  static void manage_inline(Op op, std::byte* self, std::byte* from) {
    if (op == Op::kMove) {
      ::new (static_cast<void*>(self)) D(std::move(*as<D>(from)));
      as<D>(from)->~D();
    } else {
      as<D>(self)->~D();
    }
  }
  template <typename D>
  static void manage_heap(Op op, std::byte* self, std::byte* from) {
    if (op == Op::kMove) {
      ::new (static_cast<void*>(self)) D*(*as<D*>(from));
    } else {
      delete *as<D*>(self);
    }
  }

  void take(InlineFunction& other) noexcept {
    if (other.manage_ != nullptr) {
      other.manage_(Op::kMove, storage_, other.storage_);
    } else if (other.invoke_ != nullptr) {
      std::memcpy(storage_, other.storage_, Capacity);
    }
    invoke_ = other.invoke_;
    manage_ = other.manage_;
    other.invoke_ = nullptr;
    other.manage_ = nullptr;
  }

  alignas(std::max_align_t) std::byte storage_[Capacity];
  Invoke invoke_ = nullptr;
  Manage manage_ = nullptr;
};

}  // namespace stepsim::engine
