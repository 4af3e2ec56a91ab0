"""The admin index's "waiting for review" box: held ops per tenant the user may see."""

from django import template

register = template.Library()


@register.simple_tag(takes_context=True)
def waiting_by_tenant(context):
    from memory.admin.review import waiting_by_tenant as counts

    request = context.get("request")
    if request is None or not request.user.has_perm("memory.view_reviewitem"):
        return []
    return counts(request.user)
